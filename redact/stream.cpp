// Streaming: output is released only up to a line end whose redaction is final (see
// redactor.h for the rule and the cap). The pattern scan resumes where it stopped, at
// the first match still waiting for text; a known value is taken as final once every
// form fits after its start. Nothing here depends on how the input was split: chunks
// only decide when a decision is taken, never what it is.
#include <algorithm>
#include <istream>
#include <ostream>
#include <vector>

#include "redact/detail.h"

namespace pine::redact {
namespace {

constexpr std::size_t kNone = std::string_view::npos;

// Sorted by begin, overlapping and touching spans joined, as Impl::findAll returns them.
void sortMerge(std::vector<Span>& spans) {
  std::sort(spans.begin(), spans.end(), [](const Span& a, const Span& b) {
    return a.begin != b.begin ? a.begin < b.begin : a.end > b.end;
  });
  std::size_t k = 0;
  for (const Span& sp : spans) {
    if (k > 0 && sp.begin <= spans[k - 1].end) {
      spans[k - 1].end = std::max(spans[k - 1].end, sp.end);
    } else {
      spans[k++] = sp;
    }
  }
  spans.resize(k);
}

// The span of a sorted, merged list that holds byte p, or nullptr.
const Span* spanAt(const std::vector<Span>& merged, std::size_t p) {
  auto it = std::upper_bound(merged.begin(), merged.end(), p,
                             [](std::size_t v, const Span& sp) { return v < sp.begin; });
  if (it == merged.begin() || std::prev(it)->end <= p) return nullptr;
  return &*std::prev(it);
}

// A byte after which the text may be cut without splitting a word, a token or an escape.
bool breakAfter(char c) {
  using namespace detail;
  return static_cast<unsigned char>(c) < 0x80 && c != '%' && c != '\\' &&
         !is(c, kAlnum | kUnder | kDash | kDot | kPlus | kSlash | kEq | kTilde);
}

void addCollected(std::vector<Span>* collect, std::size_t b, std::size_t e) {
  if (!collect || e <= b) return;
  if (!collect->empty() && collect->back().end >= b) {
    collect->back().end = std::max(collect->back().end, e);
  } else {
    collect->push_back({b, e});
  }
}

}  // namespace

StreamRedactor::StreamRedactor(const Redactor& redactor) : StreamRedactor(redactor, {kMaxHold, kTail, kContext}) {}

StreamRedactor::StreamRedactor(const Redactor& redactor, Limits limits)
    : impl_(redactor.impl_), limits_(limits), open_(kNone), hold_(kNone) {}

std::string StreamRedactor::feed(std::string_view chunk) {
  std::string out;
  feedInto(chunk, out);
  return out;
}

std::string StreamRedactor::finish() {
  std::string out;
  finishInto(out);
  return out;
}

void StreamRedactor::feedInto(std::string_view chunk, std::string& out) {
  // A window at a time: a huge chunk needs no more memory than many small ones.
  while (!chunk.empty()) {
    const std::size_t take = std::min(chunk.size(), limits_.maxHold);
    pending_.append(chunk.data(), take);
    chunk.remove_prefix(take);
    advance(out);
  }
}

void StreamRedactor::advance(std::string& out) {
  for (;;) {
    if (carry_ && !swallow(false)) break;
    const std::size_t end = base_ + pending_.size();
    const std::size_t windowEnd = anchor_ + limits_.maxHold;
    // Only line ends inside the window count, so where the next window starts does not
    // depend on how much of the input had arrived when it was looked at.
    const std::size_t viewEnd = std::min(end, windowEnd);
    if (viewEnd > seenTo_) {
      const std::size_t from = std::max(seenTo_, emitted_);
      const std::size_t nl = std::string_view(pending_).substr(from - base_, viewEnd - from).rfind('\n');
      if (nl != kNone) lineEnd_ = from + nl + 1;
      seenTo_ = viewEnd;
    }
    const bool full = end >= windowEnd;
    if (lineEnd_ > decidedTo_ && (full || worthDeciding(lineEnd_))) decide(lineEnd_, out);
    if (!full) break;
    if (emitted_ > anchor_) {
      anchor_ = emitted_;  // the last final line end in the window: the next window starts there
    } else {
      cut(out);  // kMaxHold bytes without one
    }
  }
  trim();
}

// A long hold (lines chained by matches) is looked at again only once it has grown by a
// quarter, so feeding it a line at a time costs linear time, not quadratic.
bool StreamRedactor::worthDeciding(std::size_t lineEnd) const {
  const std::size_t held = lineEnd - emitted_;
  return held <= limits_.tail || (lineEnd - decidedTo_) * 4 >= held;
}

void StreamRedactor::decide(std::size_t lineEnd, std::string& out) {
  const std::string_view view(pending_.data(), lineEnd - base_);
  const std::size_t floor = std::max(floor_, base_) - base_;
  std::vector<Span> found;
  const detail::ScanStop stop = detail::findPatterns(view, floor, scanFrom_ - base_, false, found);
  for (const Span& sp : found) spans_.push_back({base_ + sp.begin, base_ + sp.end});
  scanFrom_ = base_ + stop.resume;
  open_ = stop.open ? scanFrom_ : kNone;

  // A known value is final where every form fits after its start; nearer the end of
  // the view it might still be the start of a longer one.
  std::vector<Span> known;
  impl_->findKnown(view.substr(knownFrom_ - base_), known);
  const std::size_t longest = std::max<std::size_t>(impl_->longestForm, 1);
  const std::size_t settled = std::max(knownFrom_, lineEnd + 1 > longest ? lineEnd + 1 - longest : 0);
  std::vector<Span> all = spans_;
  for (const Span& k : known) {
    const Span sp{knownFrom_ + k.begin, knownFrom_ + k.end};
    all.push_back(sp);
    if (sp.begin < settled) spans_.push_back(sp);
  }
  knownFrom_ = settled;
  hold_ = knownHold(view);
  decidedTo_ = lineEnd;

  // The last line end before anything undecided whose newline no span covers.
  sortMerge(all);
  const std::size_t limit = std::min({lineEnd, open_, hold_});
  std::size_t cutAt = emitted_;
  for (std::size_t p = limit; p > emitted_;) {
    const std::size_t nl = view.substr(emitted_ - base_, p - emitted_).rfind('\n');
    if (nl == kNone) break;
    const Span* covering = spanAt(all, emitted_ + nl);
    if (!covering) {
      cutAt = emitted_ + nl + 1;
      break;
    }
    p = covering->begin;
  }
  if (cutAt > emitted_) {
    emit(cutAt, all, out);
    knownFrom_ = std::max(knownFrom_, cutAt);  // the tentative ones before the cut were final after all
    scanFrom_ = std::max(scanFrom_, cutAt);    // the scan may have stopped on the '\n', which starts no match
  }
}

// The earliest start of a multi-line known value whose first lines end the view: it
// may go on in text that has not arrived.
std::size_t StreamRedactor::knownHold(std::string_view view) const {
  std::size_t hold = kNone;
  const std::size_t viewEnd = base_ + view.size();
  for (std::uint32_t idx : impl_->multiline) {
    const std::string& f = impl_->forms[idx];
    // Longest prefix first: it starts earliest.
    for (std::size_t k = f.rfind('\n', f.size() - 2); k != std::string::npos; k = k ? f.rfind('\n', k - 1) : kNone) {
      const std::size_t len = k + 1;
      if (len > view.size() || viewEnd - len < emitted_) continue;  // would have started in text already out
      if (view.ends_with(std::string_view(f.data(), len))) {
        hold = std::min(hold, viewEnd - len);
        break;
      }
    }
  }
  return hold;
}

// No final line end in kMaxHold bytes: cut inside the window, read as if the input
// ended with it, where the cut splits no match and leaves kTail bytes of look-ahead.
void StreamRedactor::cut(std::string& out) {
  const std::size_t windowEnd = anchor_ + limits_.maxHold;
  const std::string_view view(pending_.data(), windowEnd - base_);
  std::vector<Span> found, consumed, known;
  detail::findPatterns(view, std::max(floor_, base_) - base_, emitted_ - base_, true, found, &consumed);
  impl_->findKnown(view.substr(emitted_ - base_), known);
  std::vector<Span> spans;
  for (const Span& sp : found) spans.push_back({base_ + sp.begin, base_ + sp.end});
  for (const Span& sp : known) spans.push_back({emitted_ + sp.begin, emitted_ + sp.end});
  sortMerge(spans);

  // A cut may not touch a span nor fall inside what a match read.
  std::vector<Span> blocked;
  for (const Span& sp : spans) blocked.push_back({sp.begin, sp.end + 1});
  for (const Span& r : consumed) {
    if (r.end > r.begin + 1) blocked.push_back({base_ + r.begin + 1, base_ + r.end});
  }
  sortMerge(blocked);

  // In the window's second half (so each cut moves on by half a window), and before a
  // match still open at the last line end, or a multi-line known value that may be
  // starting, so that it goes whole into what follows.
  const std::size_t lo = emitted_ + limits_.maxHold / 2;
  std::size_t hi = windowEnd - limits_.tail;
  if (decidedTo_ > emitted_) {
    if (open_ != kNone && open_ >= lo) hi = std::min(hi, open_);
    if (hold_ != kNone && hold_ >= lo) hi = std::min(hi, hold_);
  }
  std::size_t atSpace = kNone, atBreak = kNone;
  for (std::size_t c = hi; c >= lo;) {
    if (const Span* b = spanAt(blocked, c)) {
      if (b->begin == 0) break;
      c = b->begin - 1;
      continue;
    }
    const char before = pending_[c - 1 - base_];
    if (before == ' ' || before == '\t') {
      atSpace = c;
      break;
    }
    if (atBreak == kNone && breakAfter(before)) atBreak = c;
    --c;
  }
  const std::size_t at = atSpace != kNone ? atSpace : atBreak != kNone ? atBreak : hi;
  const Span* across = spanAt(spans, at);
  const bool carry = across && across->begin < at;  // only when no clean cut was found
  emit(at, spans, out);
  startSegment(at, at - limits_.context);
  carry_ = carry;
}

// After a cut inside a match (longer than kTail): its marker is out, and the rest of
// its line goes with it. Returns false while the line goes on past what has arrived
// (unless finishing: then the input's end ends it).
bool StreamRedactor::swallow(bool finishing) {
  const std::size_t end = base_ + pending_.size();
  std::size_t p = emitted_;
  while (p < end && !detail::is(pending_[p - base_], detail::kEol)) ++p;
  addCollected(collect_, emitted_, p);
  if (p == end && !finishing) {
    emitted_ = segment_ = floor_ = end;
    return false;
  }
  carry_ = false;
  startSegment(p, p);  // a line end: nothing before it is read
  return true;
}

void StreamRedactor::startSegment(std::size_t at, std::size_t floor) {
  emitted_ = segment_ = anchor_ = scanFrom_ = knownFrom_ = decidedTo_ = at;
  floor_ = floor;
  seenTo_ = std::max(seenTo_, at);
  spans_.clear();
  open_ = hold_ = kNone;
}

void StreamRedactor::emit(std::size_t to, const std::vector<Span>& spans, std::string& out) {
  std::size_t pos = emitted_;
  for (const Span& sp : spans) {
    if (sp.end <= emitted_) continue;
    if (sp.begin >= to) break;
    const std::size_t b = std::max(sp.begin, pos), e = std::min(sp.end, to);
    if (!quiet_) {
      if (b > pos) out.append(pending_, pos - base_, b - pos);
      if (!(b == emitted_ && inSpan_)) out.append(kMarker);  // a span that goes on from the last output has its marker
    }
    addCollected(collect_, b, e);
    pos = e;
  }
  if (pos < to && !quiet_) out.append(pending_, pos - base_, to - pos);
  inSpan_ = pos == to;
  emitted_ = to;
  std::erase_if(spans_, [&](const Span& sp) { return sp.end <= to; });
}

// Keeps what is not out yet, and the look-behind of a segment whose first line is still
// being read. The front is dropped once it is at least half the buffer: each byte is
// moved a bounded number of times.
void StreamRedactor::trim() {
  const std::size_t keep = std::max(base_, emitted_ == segment_ ? floor_ : emitted_);
  if ((keep - base_) * 2 < pending_.size()) return;
  pending_.erase(0, keep - base_);
  base_ = keep;
}

// The end of the input decides every match still open.
void StreamRedactor::finishInto(std::string& out) {
  if (carry_) swallow(true);
  const std::size_t end = base_ + pending_.size();
  const std::string_view view(pending_);
  std::vector<Span> found, known;
  detail::findPatterns(view, std::max(floor_, base_) - base_, scanFrom_ - base_, true, found);
  impl_->findKnown(view.substr(knownFrom_ - base_), known);
  std::vector<Span> all = spans_;
  for (const Span& sp : found) all.push_back({base_ + sp.begin, base_ + sp.end});
  for (const Span& sp : known) all.push_back({knownFrom_ + sp.begin, knownFrom_ + sp.end});
  sortMerge(all);
  if (end > emitted_) emit(end, all, out);
  // Ready for another input.
  pending_.clear();
  base_ = lineEnd_ = seenTo_ = 0;
  startSegment(0, 0);
  carry_ = inSpan_ = false;
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

namespace detail {

StreamRedactor StreamTesting::make(const Redactor& redactor, std::size_t maxHold, std::size_t tail,
                                   std::size_t context) {
  return StreamRedactor(redactor, {maxHold, tail, context});
}

std::string StreamTesting::whole(const Redactor& redactor, std::string_view text, std::size_t maxHold,
                                 std::size_t tail, std::size_t context) {
  StreamRedactor s = make(redactor, maxHold, tail, context);
  std::string out;
  s.feedInto(text, out);
  s.finishInto(out);
  return out;
}

std::size_t StreamTesting::held(const StreamRedactor& stream) { return stream.pending_.size(); }

SpanStream::SpanStream(const Redactor& redactor, std::size_t maxHold, std::size_t tail, std::size_t context)
    : stream_(redactor, {maxHold, tail, context}) {
  stream_.collect_ = &spans_;
  stream_.quiet_ = true;
}

void SpanStream::feed(std::string_view chunk) { stream_.feedInto(chunk, sink_); }

void SpanStream::finish() {
  stream_.finishInto(sink_);
  done_ = true;
}

std::size_t SpanStream::final() const { return done_ ? kNone : stream_.emitted_; }

}  // namespace detail

}  // namespace pine::redact
