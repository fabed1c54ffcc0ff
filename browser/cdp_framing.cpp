#include "browser/cdp_framing.h"

namespace pine::browser {

void NulFramer::feed(std::string_view bytes, std::vector<std::string>& out) {
  while (!bytes.empty()) {
    size_t nul = bytes.find('\0');
    std::string_view part = bytes.substr(0, nul);
    if (!skipping_) {
      if (buf_.size() + part.size() > max_) {
        skipping_ = true;
        buf_.clear();
        buf_.shrink_to_fit();
      } else {
        buf_.append(part);
      }
    }
    if (nul == std::string_view::npos) return;
    if (skipping_) {
      ++dropped_;
      skipping_ = false;
    } else {
      out.push_back(std::move(buf_));
    }
    buf_.clear();
    bytes.remove_prefix(nul + 1);
  }
}

}  // namespace pine::browser
