// A configured schedule in words, for pinectl, the control API and Telegram.
#pragma once
#include <string>

#include "config/model.h"

namespace pine::schedule {

// "every day at 07:00 (Europe/Berlin)", "on Mon-Fri at 07:30 (local time)", "every 15 min",
// "once at 2026-12-24 18:00 (UTC)". A cron expression too irregular to say simply is quoted as written.
std::string describeSchedule(const config::Schedule& s);

}  // namespace pine::schedule
