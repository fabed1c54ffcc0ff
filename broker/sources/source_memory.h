// What a source remembers between runs and its status line, kept in the store's source_state and
// source_status tables (schema v6). An interface, so that the sources themselves touch no store:
// the broker hands them storeMemory(), tests a real store too.
#pragma once
#include <map>
#include <memory>
#include <string>

namespace pine::store {
class Store;
}

namespace pine::sources {

class SourceMemory {
 public:
  virtual ~SourceMemory() = default;
  virtual std::map<std::string, std::string> recall(const std::string& source) = 0;  // by key
  virtual void remember(const std::string& source, const std::string& key, const std::string& value) = 0;
  virtual void rememberAll(const std::string& source, const std::map<std::string, std::string>& values) = 0;  // in one go
  virtual void forget(const std::string& source, const std::string& key) = 0;
  virtual void forgetAll(const std::string& source) = 0;  // every key, in one go
  virtual void noteError(const std::string& source, const std::string& error) = 0;
};

// The store's tables; `store` must outlive what is returned.
std::shared_ptr<SourceMemory> storeMemory(store::Store& store);

}  // namespace pine::sources
