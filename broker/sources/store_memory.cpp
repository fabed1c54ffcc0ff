// SourceMemory on the store's source_state and source_status tables.
#include "broker/store/store.h"
#include "broker/sources/source_memory.h"
#include "common/log.h"

namespace pine::sources {
namespace {

class StoreMemory final : public SourceMemory {
 public:
  explicit StoreMemory(store::Store& store) : store_(store) {}
  std::map<std::string, std::string> recall(const std::string& source) override { return store_.sourceStates(source); }
  void remember(const std::string& source, const std::string& key, const std::string& value) override {
    store_.putSourceState(source, key, value, nowMs());
  }
  void rememberAll(const std::string& source, const std::map<std::string, std::string>& values) override {
    store_.putSourceStates(source, values, nowMs());
  }
  void forget(const std::string& source, const std::string& key) override { store_.removeSourceState(source, key); }
  void forgetAll(const std::string& source) override { store_.forgetSourceState(source); }
  void noteError(const std::string& source, const std::string& error) override {
    store_.noteSourceError(source, nowMs(), error);
  }

 private:
  store::Store& store_;
};

}  // namespace

std::shared_ptr<SourceMemory> storeMemory(store::Store& store) { return std::make_shared<StoreMemory>(store); }

}  // namespace pine::sources
