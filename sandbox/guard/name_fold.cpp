#include "sandbox/guard/name_fold.h"

#include <cctype>
#include <cstdint>

namespace pine::guard {
namespace {

// Default ignorable code points (DerivedCoreProperties), which NFKC + case fold
// with UTF8PROC_IGNORE drops.
bool foldIgnorable(uint32_t c) {
  return c == 0xAD || c == 0x34F || c == 0x61C || c == 0x115F || c == 0x1160 || c == 0x17B4 || c == 0x17B5 ||
         (c >= 0x180B && c <= 0x180F) || (c >= 0x200B && c <= 0x200F) || (c >= 0x202A && c <= 0x202E) ||
         (c >= 0x2060 && c <= 0x206F) || c == 0x3164 || (c >= 0xFE00 && c <= 0xFE0F) || c == 0xFEFF ||
         c == 0xFFA0 || (c >= 0xFFF0 && c <= 0xFFF8) || (c >= 0x1BCA0 && c <= 0x1BCA3) ||
         (c >= 0x1D173 && c <= 0x1D17A) || (c >= 0xE0000 && c <= 0xE0FFF);
}

// Where NFKC + case fold turns one code point into ASCII text: that text
// (lower case), or nullptr when it does not.
const char* foldToAscii(uint32_t c) {
  // U+FF01..U+FF5E are ASCII ! .. ~ in full width; the same, case folded.
  static const char fullwidth[] =
      "!\0\"\0#\0$\0%\0&\0'\0(\0)\0*\0+\0,\0-\0.\0/\0"
      "0\0001\0002\0003\0004\0005\0006\0007\0008\0009\0:\0;\0<\0=\0>\0?\0@\0"
      "a\0b\0c\0d\0e\0f\0g\0h\0i\0j\0k\0l\0m\0n\0o\0p\0q\0r\0s\0t\0u\0v\0w\0x\0y\0z\0"
      "[\0\\\0]\0^\0_\0`\0"
      "a\0b\0c\0d\0e\0f\0g\0h\0i\0j\0k\0l\0m\0n\0o\0p\0q\0r\0s\0t\0u\0v\0w\0x\0y\0z\0"
      "{\0|\0}\0~";
  static const char* const lowerLetters[26] = {"a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k", "l", "m",
                                               "n", "o", "p", "q", "r", "s", "t", "u", "v", "w", "x", "y", "z"};
  static const char* const digits[10] = {"0", "1", "2", "3", "4", "5", "6", "7", "8", "9"};
  auto letter = [&](uint32_t k) { return lowerLetters[k % 26]; };
  if (c >= 0xFF01 && c <= 0xFF5E) return fullwidth + 2 * (c - 0xFF01);
  if (c >= 0x1D400 && c <= 0x1D6A3) return letter((c - 0x1D400) % 52);  // mathematical alphanumerics
  if (c >= 0x1D7CE && c <= 0x1D7FF) return digits[(c - 0x1D7CE) % 10];
  if (c >= 0x24B6 && c <= 0x24CF) return letter(c - 0x24B6);  // circled capitals
  if (c >= 0x24D0 && c <= 0x24E9) return letter(c - 0x24D0);  // circled small letters
  if (c >= 0x2460 && c <= 0x2468) return digits[c - 0x2460 + 1];
  if (c >= 0x1F130 && c <= 0x1F149) return letter(c - 0x1F130);  // squared capitals
  if (c >= 0x2080 && c <= 0x2089) return digits[c - 0x2080];  // subscript digits
  if (c >= 0x2074 && c <= 0x2079) return digits[c - 0x2070];  // superscript digits
  if (c >= 0x2160 && c <= 0x217F) {  // roman numerals
    static const char* const roman[16] = {"i",  "ii", "iii", "iv", "v", "vi", "vii", "viii",
                                          "ix", "x",  "xi",  "xii", "l", "c", "d",  "m"};
    return roman[(c - 0x2160) % 16];
  }
  switch (c) {
    case 0xAA: return "a";
    case 0xBA: return "o";
    case 0xB2: return "2";
    case 0xB3: return "3";
    case 0xB9: return "1";
    case 0xDF: return "ss";
    case 0x17F: return "s";
    case 0x1E9E: return "ss";
    case 0x2070: return "0";
    case 0x2071: return "i";
    case 0x207F: return "n";
    case 0x24EA: return "0";
    case 0x2090: return "a";
    case 0x2091: return "e";
    case 0x2092: return "o";
    case 0x2093: return "x";
    case 0x2095: return "h";
    case 0x2096: return "k";
    case 0x2097: return "l";
    case 0x2098: return "m";
    case 0x2099: return "n";
    case 0x209A: return "p";
    case 0x209B: return "s";
    case 0x209C: return "t";
    case 0x02B0: return "h";
    case 0x02B2: return "j";
    case 0x02B3: return "r";
    case 0x02B7: return "w";
    case 0x02B8: return "y";
    case 0x02E1: return "l";
    case 0x02E2: return "s";
    case 0x02E3: return "x";
    case 0x2102: return "c";
    case 0x210A: return "g";
    case 0x210B:
    case 0x210C:
    case 0x210D: return "h";
    case 0x210E: return "h";
    case 0x2110:
    case 0x2111: return "i";
    case 0x2112: return "l";
    case 0x2113: return "l";
    case 0x2115: return "n";
    case 0x2119: return "p";
    case 0x211A: return "q";
    case 0x211B:
    case 0x211C:
    case 0x211D: return "r";
    case 0x2124: return "z";
    case 0x2128: return "z";
    case 0x212A: return "k";  // KELVIN SIGN
    case 0x212C: return "b";
    case 0x212D: return "c";
    case 0x212F: return "e";
    case 0x2130: return "e";
    case 0x2131: return "f";
    case 0x2133: return "m";
    case 0x2134: return "o";
    case 0x2139: return "i";
    case 0x2145: return "d";
    case 0x2146: return "d";
    case 0x2147: return "e";
    case 0x2148: return "i";
    case 0x2149: return "j";
    case 0x2024: return ".";  // ONE DOT LEADER
    case 0x2025: return "..";
    case 0x2026: return "...";
    case 0xFE52: return ".";
    case 0xFE63: return "-";
    case 0xFE33:
    case 0xFE34:
    case 0xFE4D:
    case 0xFE4E:
    case 0xFE4F: return "_";
    case 0xFB00: return "ff";
    case 0xFB01: return "fi";
    case 0xFB02: return "fl";
    case 0xFB03: return "ffi";
    case 0xFB04: return "ffl";
    case 0xFB05:
    case 0xFB06: return "st";
    default: return nullptr;
  }
}

// One UTF-8 sequence at s[i]: its code point and length, or length 0 when the
// bytes are not valid UTF-8 there.
size_t decodeUtf8(std::string_view s, size_t i, uint32_t& cp) {
  auto b = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  unsigned char c0 = b(i);
  size_t len = c0 >= 0xF0 && c0 <= 0xF4 ? 4 : c0 >= 0xE0 ? 3 : c0 >= 0xC2 && c0 <= 0xDF ? 2 : 0;
  if (len == 0 || i + len > s.size()) return 0;
  cp = c0 & (len == 2 ? 0x1F : len == 3 ? 0x0F : 0x07);
  for (size_t k = 1; k < len; ++k) {
    if ((b(i + k) & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (b(i + k) & 0x3F);
  }
  // Overlong forms, surrogates and values past U+10FFFF are not UTF-8.
  if ((len == 3 && cp < 0x800) || (len == 4 && (cp < 0x10000 || cp > 0x10FFFF)) || (cp >= 0xD800 && cp <= 0xDFFF))
    return 0;
  return len;
}

}  // namespace

std::string foldName(std::string_view name) {
  std::string out;
  out.reserve(name.size());
  for (size_t i = 0; i < name.size();) {
    unsigned char c = static_cast<unsigned char>(name[i]);
    if (c < 0x80) {
      out += static_cast<char>(std::tolower(c));
      ++i;
      continue;
    }
    uint32_t cp = 0;
    size_t len = decodeUtf8(name, i, cp);
    if (len == 0) {  // not UTF-8: the byte as it is
      out += name[i];
      ++i;
      continue;
    }
    if (!foldIgnorable(cp)) {
      if (const char* ascii = foldToAscii(cp))
        out += ascii;
      else
        out.append(name.substr(i, len));
    }
    i += len;
  }
  return out;
}

}  // namespace pine::guard
