// parseCron: every field form is read into the right bits, and every refusal says which field,
// what is wrong and what is allowed.
#include <doctest/doctest.h>

#include <string>

#include "schedule/cron.h"

using pine::schedule::Cron;
using pine::schedule::parseCron;

namespace {

Cron parsed(const char* expr) {
  std::string error;
  auto c = parseCron(expr, &error);
  INFO(expr, ": ", error);
  REQUIRE(c);
  CHECK(error.empty());
  return *c;
}

std::string refused(const char* expr) {
  std::string error;
  auto c = parseCron(expr, &error);
  INFO(expr);
  CHECK_FALSE(c);
  CHECK_FALSE(error.empty());
  return error;
}

template <std::size_t N>
std::string bits(const std::bitset<N>& b) {
  std::string out;
  for (std::size_t i = 0; i < N; ++i)
    if (b[i]) out += (out.empty() ? "" : ",") + std::to_string(i);
  return out;
}

}  // namespace

TEST_CASE("cron: '*' sets every value of every field and restricts no day") {
  Cron c = parsed("* * * * *");
  CHECK(c.minutes.count() == 60);
  CHECK(c.hours.count() == 24);
  CHECK(bits(c.days) == bits(std::bitset<32>(0xFFFFFFFEu)));
  CHECK(c.months.count() == 12);
  CHECK_FALSE(c.months[0]);
  CHECK(c.weekdays.count() == 7);
  CHECK_FALSE(c.domRestricted);
  CHECK_FALSE(c.dowRestricted);
}

TEST_CASE("cron: numbers, lists, ranges and steps") {
  Cron c = parsed("5 7 1 6 3");
  CHECK(bits(c.minutes) == "5");
  CHECK(bits(c.hours) == "7");
  CHECK(bits(c.days) == "1");
  CHECK(bits(c.months) == "6");
  CHECK(bits(c.weekdays) == "3");
  CHECK(c.domRestricted);
  CHECK(c.dowRestricted);

  CHECK(bits(parsed("0,15,30,45 * * * *").minutes) == "0,15,30,45");
  CHECK(bits(parsed("* 9-12 * * *").hours) == "9,10,11,12");
  CHECK(bits(parsed("*/15 * * * *").minutes) == "0,15,30,45");
  CHECK(bits(parsed("1-30/5 * * * *").minutes) == "1,6,11,16,21,26");
  CHECK(bits(parsed("50/4 * * * *").minutes) == "50,54,58");  // a start with a step runs to the end
  CHECK(bits(parsed("* */6 * * *").hours) == "0,6,12,18");
  CHECK(bits(parsed("* * */10 * *").days) == "1,11,21,31");
  CHECK(bits(parsed("* * * */3 *").months) == "1,4,7,10");
  CHECK(bits(parsed("0-5,30-32,59 * * * *").minutes) == "0,1,2,3,4,5,30,31,32,59");
  CHECK(bits(parsed("0 0 1,15,31 * *").days) == "1,15,31");
  // Blanks of any kind and number separate fields.
  CHECK(bits(parsed("  0\t7  *   * *  ").hours) == "7");
}

TEST_CASE("cron: month and day names, any case, also in ranges; 7 is Sunday") {
  CHECK(bits(parsed("0 0 * jan,Jul,DEC *").months) == "1,7,12");
  CHECK(bits(parsed("0 0 * mar-may *").months) == "3,4,5");
  CHECK(bits(parsed("0 7 * * mon-fri").weekdays) == "1,2,3,4,5");
  CHECK(bits(parsed("0 7 * * SUN,sat").weekdays) == "0,6");
  CHECK(bits(parsed("0 7 * * 7").weekdays) == "0");
  CHECK(bits(parsed("0 7 * * 5-7").weekdays) == "0,5,6");
  CHECK(bits(parsed("0 7 * * 0").weekdays) == "0");
  CHECK(bits(parsed("0 7 * * */2").weekdays) == "0,2,4,6");
}

TEST_CASE("cron: a day field is restricted unless it starts with '*'") {
  CHECK(parsed("0 0 1 * mon").domRestricted);
  CHECK(parsed("0 0 1-31 * *").domRestricted);  // written out: restricted, as in Vixie cron
  CHECK_FALSE(parsed("0 0 */2 * mon").domRestricted);
  CHECK(parsed("0 0 */2 * mon").dowRestricted);
  CHECK_FALSE(parsed("0 0 1 * *").dowRestricted);
}

TEST_CASE("cron: the wrong number of fields, or none") {
  CHECK(refused("") == "the cron expression is empty; expected five fields (minute hour day-of-month month "
                       "day-of-week), e.g. \"0 7 * * mon-fri\"");
  CHECK(refused("   \t ").find("is empty") != std::string::npos);
  CHECK(refused("0 7 * *") == "expected five fields (minute hour day-of-month month day-of-week), e.g. "
                              "\"0 7 * * mon-fri\", got 4");
  CHECK(refused("0 0 7 * * *").find("got 6") != std::string::npos);  // no seconds field
  CHECK(refused("@daily").find("got 1") != std::string::npos);
}

TEST_CASE("cron: values outside a field's range name the field and the range") {
  CHECK(refused("60 * * * *") == "'60' is outside 0-59 in the minute field");
  CHECK(refused("0 24 * * *") == "'24' is outside 0-23 in the hour field");
  CHECK(refused("0 0 0 * *") == "'0' is outside 1-31 in the day of month field");
  CHECK(refused("0 0 32 * *") == "'32' is outside 1-31 in the day of month field");
  CHECK(refused("0 0 * 13 *") == "'13' is outside 1-12 in the month field");
  CHECK(refused("0 0 * 0 *") == "'0' is outside 1-12 in the month field");
  CHECK(refused("0 0 * * 8") == "'8' is outside 0-7 in the day of week field");
  CHECK(refused("0 10-70 * * *") == "'10-70' is outside 0-23 in the hour field");
  CHECK(refused("0 9999 * * *").find("hour field: use 0-23") != std::string::npos);  // too long to be a number
}

TEST_CASE("cron: bad steps say what a step may be") {
  CHECK(refused("*/0 * * * *") == "bad step '*/0' in the minute field: a step is a whole number from 1 to 59");
  CHECK(refused("*/60 * * * *").find("bad step '*/60' in the minute field") == 0);
  CHECK(refused("* */24 * * *") == "bad step '*/24' in the hour field: a step is a whole number from 1 to 23");
  CHECK(refused("*/ * * * *").find("bad step") == 0);
  CHECK(refused("*/x * * * *").find("bad step") == 0);
  CHECK(refused("*/-1 * * * *").find("bad step") == 0);
  CHECK(refused("1/2/3 * * * *").find("bad step") == 0);
}

TEST_CASE("cron: unknown names and unreadable items list what the field allows") {
  CHECK(refused("0 7 * foo *") ==
        "cannot read 'foo' in the month field: use 1-12 or jan-dec, or '*', a number, a list (1,15), a range (1-5) "
        "or a step (*/15, 1-30/5)");
  CHECK(refused("0 7 * * monday").find("cannot read 'monday' in the day of week field: use 0-7 (0 and 7 are "
                                       "Sunday) or sun-sat") == 0);
  CHECK(refused("0 7 * * mon-xyz").find("cannot read 'mon-xyz' in the day of week field") == 0);
  CHECK(refused("0 7 * mon *").find("cannot read 'mon' in the month field") == 0);  // names stay in their field
  CHECK(refused("jan 7 * * *").find("cannot read 'jan' in the minute field") == 0);
  CHECK(refused("0 7 mon * *").find("in the day of month field") != std::string::npos);
  CHECK(refused("-5 * * * *").find("cannot read '-5' in the minute field") == 0);
  CHECK(refused("5- * * * *").find("cannot read '5-'") == 0);
  CHECK(refused("1,,2 * * * *") == "empty list item in the minute field; use '*', a number, a list (1,15), a range "
                                   "(1-5) or a step (*/15, 1-30/5)");
  CHECK(refused("1, * * * *").find("empty list item") == 0);
}

TEST_CASE("cron: ranges that run backwards, and days no listed month has") {
  CHECK(refused("0 7 * * 5-1") == "'5-1' runs backwards in the day of week field; write it as two ranges "
                                  "(e.g. 22-23,0-2)");
  CHECK(refused("0 22-2 * * *").find("runs backwards in the hour field") != std::string::npos);
  CHECK(refused("0 0 31 feb *") == "day of month '31' never falls in month 'feb', so the schedule would never run");
  CHECK(refused("0 0 30,31 2 *").find("never") != std::string::npos);
  CHECK(refused("0 0 31 apr,jun,sep,nov *").find("never") != std::string::npos);
  // ...but these can run: Feb 29 in leap years, 31 in some listed month, and a weekday OR'ed in.
  parsed("0 0 29 feb *");
  parsed("0 0 31 feb,mar *");
  parsed("0 0 31 feb mon");
}
