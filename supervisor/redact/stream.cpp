// Streaming: output is released a line at a time, because every pattern except a
// PEM block and a multi-line known value ends at the end of its line. Those two are
// held back until they close; a line longer than kMaxHold is cut inside with
// look-ahead and look-behind so nothing is torn at the cut.
#include <algorithm>
#include <istream>
#include <ostream>
#include <vector>

#include "supervisor/redact/detail.h"

namespace pine::redact {
namespace {

std::size_t lineStart(std::string_view buf, std::size_t pos) {
  const std::size_t nl = pos == 0 ? std::string_view::npos : buf.rfind('\n', pos - 1);
  return nl == std::string_view::npos ? 0 : nl + 1;
}

}  // namespace

StreamRedactor::StreamRedactor(const Redactor& redactor) : impl_(redactor.impl_) {}

std::size_t StreamRedactor::holdPoint(std::size_t cut) const {
  const std::string_view buf(pending_.data(), cut);
  std::size_t hold = cut;
  // A private key block whose END has not arrived, while what follows still looks like key body.
  const std::size_t b = buf.rfind("-----BEGIN ");
  if (b != std::string_view::npos && b >= done_) {
    const std::string_view header = buf.substr(b + 11, 80);
    const std::size_t close = header.find("-----");
    if (close != std::string_view::npos && header.substr(0, close).find("PRIVATE KEY") != std::string_view::npos &&
        buf.find("-----END ", b) == std::string_view::npos) {
      const std::string_view body = buf.substr(b + 11 + close + 5);
      const bool stillBody = std::all_of(body.begin(), body.end(), [](char c) {
        return detail::is(c, detail::kB64 | detail::kSpace | detail::kEol | detail::kDash) || c == '\\' ||
               c == ':' || c == ',';
      });
      if (stillBody) hold = std::min(hold, lineStart(buf, b));
    }
  }
  // The first lines of a known value that spans lines.
  for (std::uint32_t idx : impl_->multiline) {
    const std::string& f = impl_->forms[idx];
    for (std::size_t p = f.find('\n'); p != std::string::npos && p + 1 < f.size(); p = f.find('\n', p + 1)) {
      const std::string_view prefix(f.data(), p + 1);
      if (buf.ends_with(prefix)) hold = std::min(hold, lineStart(buf, cut - prefix.size()));
    }
  }
  return hold;
}

std::string StreamRedactor::emit(std::size_t cut) {
  const std::string_view view(pending_.data(), cut);
  std::string out = Redactor::Impl::apply(view, impl_->findAll(view), done_, cut);
  pending_.erase(0, cut);
  done_ = 0;
  return out;
}

std::string StreamRedactor::feed(std::string_view chunk) {
  pending_.append(chunk);
  const std::size_t nl = pending_.rfind('\n');
  if (nl != std::string::npos && nl + 1 > done_) {
    const std::size_t cut = holdPoint(nl + 1);
    if (cut > done_) return emit(cut);
  }
  if (pending_.size() - done_ <= kMaxHold) return {};

  // A very long line (or an open block that never closes): cut inside it, keeping
  // kTail bytes unseen so every match that starts before the cut is complete.
  const std::vector<Span> spans = impl_->findAll(pending_);
  std::size_t cut = pending_.size() - kTail;
  for (const Span& sp : spans) {
    if (sp.begin < cut && sp.end > cut) {
      // A match still open at the end of the buffer waits, unless waiting would never end.
      cut = sp.end < pending_.size() || sp.begin <= done_ ? sp.end : sp.begin;
      break;
    }
  }
  std::string out = Redactor::Impl::apply(pending_, spans, done_, cut);
  const std::size_t keep = cut > kContext ? cut - kContext : 0;
  pending_.erase(0, keep);
  done_ = cut - keep;
  return out;
}

std::string StreamRedactor::finish() {
  std::string out = Redactor::Impl::apply(pending_, impl_->findAll(pending_), done_, pending_.size());
  pending_.clear();
  done_ = 0;
  return out;
}

void Redactor::redactStream(std::istream& in, std::ostream& out) const {
  StreamRedactor stream(*this);
  std::vector<char> buf(64 << 10);
  std::string batch;
  for (;;) {
    in.getline(buf.data(), static_cast<std::streamsize>(buf.size()));
    const std::streamsize got = in.gcount();
    if (in.bad()) break;
    if (in.eof()) {
      batch.append(buf.data(), static_cast<std::size_t>(got));  // last line without a newline
    } else if (in.fail()) {
      batch.append(buf.data(), static_cast<std::size_t>(got));  // buffer full: the line goes on
      in.clear();
    } else {
      batch.append(buf.data(), static_cast<std::size_t>(got - 1));  // got counts the '\n'
      batch += '\n';
    }
    const bool more = !in.eof() && in.rdbuf()->in_avail() > 0;
    if (more && batch.size() < (256u << 10)) continue;  // batch what is already buffered
    out << stream.feed(batch);
    batch.clear();
    if (in.eof()) break;
    if (!more) out.flush();  // nothing waiting: let a live reader see this line now
  }
  out << stream.finish();
  out.flush();
}

}  // namespace pine::redact
