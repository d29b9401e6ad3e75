#include "specs/spec_tokens.h"

#include <algorithm>

namespace mrcnn::spec {
namespace {

// ASCII classes spelled out: std::isalpha and friends follow the C locale, which the GUI
// sets from the user's environment.
bool isAsciiSpace(unsigned char c) {
  return c == ' ' || (c >= '\t' && c <= '\r');
}
bool isAsciiLetter(unsigned char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}
bool isAsciiDigit(unsigned char c) {
  return c >= '0' && c <= '9';
}
// Letters, digits, '_' and '.': what names (`a.b`) and numbers (`1.5e3`) run over.
bool isWordChar(unsigned char c) {
  return isAsciiLetter(c) || isAsciiDigit(c) || c == '_' || c == '.';
}

unsigned char byteAt(std::string_view text, std::size_t i) {
  return static_cast<unsigned char>(text[i]);
}

bool isContinuation(std::string_view text, std::size_t i) {
  return i < text.size() && (byteAt(text, i) & 0xC0) == 0x80;
}

// The bytes of the character beyond ASCII that starts at `i`: its UTF-8 sequence, or 1 for a
// byte that starts none (the text is not UTF-8 there).
std::size_t characterLength(std::string_view text, std::size_t i) {
  const unsigned char c = byteAt(text, i);
  const std::size_t length = c >= 0xF0 && c <= 0xF7   ? 4
                             : c >= 0xE0 && c <= 0xEF ? 3
                             : c >= 0xC0 && c <= 0xDF ? 2
                                                      : 1;
  for (std::size_t k = 1; k < length; ++k) {
    if (!isContinuation(text, i + k)) return 1;
  }
  return length;
}

// The length of the Unicode space (beyond ASCII) that starts at `i`, 0 if none: U+0085,
// U+00A0, U+1680, U+2000-U+200A, U+2028, U+2029, U+202F, U+205F, U+3000.
std::size_t unicodeSpaceLength(std::string_view text, std::size_t i) {
  const auto at = [&](std::size_t k) { return i + k < text.size() ? byteAt(text, i + k) : 0; };
  if (at(0) == 0xC2 && (at(1) == 0x85 || at(1) == 0xA0)) return 2;
  if (at(0) == 0xE1 && at(1) == 0x9A && at(2) == 0x80) return 3;
  if (at(0) == 0xE2 && at(1) == 0x80) {
    const unsigned char last = at(2);
    if ((last >= 0x80 && last <= 0x8A) || last == 0xA8 || last == 0xA9 || last == 0xAF) return 3;
  }
  if (at(0) == 0xE2 && at(1) == 0x81 && at(2) == 0x9F) return 3;
  if (at(0) == 0xE3 && at(1) == 0x80 && at(2) == 0x80) return 3;
  return 0;
}

}  // namespace

std::vector<Token> tokenize(std::string_view text) {
  std::vector<Token> tokens;
  const auto add = [&](Token::Kind kind, std::size_t begin, std::size_t end) {
    tokens.push_back({kind, begin, end, text.substr(begin, end - begin)});
  };
  std::size_t i = 0;
  while (i < text.size()) {
    const unsigned char c = byteAt(text, i);
    if (isAsciiSpace(c)) {
      ++i;
    } else if (c >= 0x80) {
      const std::size_t space = unicodeSpaceLength(text, i);
      if (space > 0) {
        i += space;
      } else {
        const std::size_t length = characterLength(text, i);
        add(Token::Kind::Symbol, i, i + length);
        i += length;
      }
    } else if (c == '#') {
      while (i < text.size() && text[i] != '\n')
        ++i;
    } else if (c == '"' || c == '\'') {
      const std::size_t start = i++;
      while (i < text.size() && byteAt(text, i) != c && text[i] != '\n')
        i += text[i] == '\\' ? 2 : 1;
      i = std::min(text.size(), i + 1);
      add(Token::Kind::String, start, i);
    } else if (isAsciiLetter(c) || c == '_') {
      const std::size_t start = i;
      while (i < text.size() && isWordChar(byteAt(text, i)))
        ++i;
      add(Token::Kind::Identifier, start, i);
    } else if (isAsciiDigit(c) || c == '-' || c == '+' || c == '.') {
      const std::size_t start = i++;
      while (i < text.size() &&
             (isWordChar(byteAt(text, i)) ||
              ((text[i] == '-' || text[i] == '+') && (text[i - 1] == 'e' || text[i - 1] == 'E'))))
        ++i;
      add(Token::Kind::Number, start, i);
    } else {
      add(Token::Kind::Symbol, i, i + 1);
      ++i;
    }
  }
  return tokens;
}

}  // namespace mrcnn::spec
