#include "specs/literal.h"

#include <cctype>
#include <charconv>
#include <cmath>

namespace mrcnn::spec {
namespace {

class LiteralParser {
 public:
  explicit LiteralParser(std::string_view text) : text_(text) {}

  bool parseAll(Literal* out, LiteralError* error) {
    skipSpace();
    if (pos_ == text_.size()) return fail("empty value: expected a number, [...] or (...)", error);
    if (!parseValue(out, error)) return false;
    skipSpace();
    if (pos_ != text_.size()) {
      return fail("unexpected '" + std::string(1, text_[pos_]) + "' after the value", error);
    }
    return true;
  }

 private:
  bool fail(std::string message, LiteralError* error) const {
    if (error) *error = LiteralError{std::move(message), pos_};
    return false;
  }

  void skipSpace() {
    while (pos_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[pos_])))
      ++pos_;
  }

  bool parseValue(Literal* out, LiteralError* error) {
    out->offset = pos_;
    const char c = text_[pos_];
    if (c == '[' || c == '(') return parseSequence(out, error);
    if (c == '+' || c == '-' || c == '.' || std::isdigit(static_cast<unsigned char>(c))) {
      return parseNumber(out, error);
    }
    return fail("expected a number, [...] or (...), found '" + std::string(1, c) + "'", error);
  }

  bool parseSequence(Literal* out, LiteralError* error) {
    const char open = text_[pos_];
    const char close = open == '[' ? ']' : ')';
    out->kind = open == '[' ? Literal::Kind::List : Literal::Kind::Tuple;
    ++pos_;
    skipSpace();
    while (true) {
      if (pos_ == text_.size()) {
        return fail(std::string("missing '") + close + "' at the end", error);
      }
      if (text_[pos_] == close) {
        ++pos_;
        return true;
      }
      Literal item;
      if (!parseValue(&item, error)) return false;
      out->items.push_back(std::move(item));
      skipSpace();
      if (pos_ == text_.size()) {
        return fail(std::string("missing '") + close + "' at the end", error);
      }
      if (text_[pos_] == ',') {
        ++pos_;
        skipSpace();
      } else if (text_[pos_] != close) {
        return fail(std::string("expected ',' or '") + close + "', found '" + text_[pos_] + "'",
                    error);
      }
    }
  }

  bool parseNumber(Literal* out, LiteralError* error) {
    const std::size_t start = pos_;
    if (text_[pos_] == '+' || text_[pos_] == '-') ++pos_;
    bool digits = false;
    bool integral = true;
    while (pos_ < text_.size() && std::isdigit(static_cast<unsigned char>(text_[pos_]))) {
      ++pos_;
      digits = true;
    }
    if (pos_ < text_.size() && text_[pos_] == '.') {
      integral = false;
      ++pos_;
      while (pos_ < text_.size() && std::isdigit(static_cast<unsigned char>(text_[pos_]))) {
        ++pos_;
        digits = true;
      }
    }
    if (!digits) {
      pos_ = start;
      return fail("malformed number", error);
    }
    if (pos_ < text_.size() && (text_[pos_] == 'e' || text_[pos_] == 'E')) {
      integral = false;
      ++pos_;
      if (pos_ < text_.size() && (text_[pos_] == '+' || text_[pos_] == '-')) ++pos_;
      const std::size_t exp_start = pos_;
      while (pos_ < text_.size() && std::isdigit(static_cast<unsigned char>(text_[pos_])))
        ++pos_;
      if (pos_ == exp_start) {
        pos_ = start;
        return fail("malformed number exponent", error);
      }
    }
    // from_chars rejects a leading '+' and a bare trailing '.', which Python accepts.
    std::string token(text_.substr(start, pos_ - start));
    if (!token.empty() && token.front() == '+') token.erase(0, 1);
    double value = 0;
    const auto [end, ec] = std::from_chars(token.data(), token.data() + token.size(), value);
    if (ec != std::errc() || end != token.data() + token.size() || !std::isfinite(value)) {
      pos_ = start;
      return fail("malformed number '" + token + "'", error);
    }
    out->kind = Literal::Kind::Number;
    out->number = value;
    out->integral = integral;
    return true;
  }

  std::string_view text_;
  std::size_t pos_ = 0;
};

bool expectSequence(const Literal& literal, LiteralError* error) {
  if (literal.kind == Literal::Kind::Number) {
    if (error) *error = {"expected a list such as [1, 2], found a single number", literal.offset};
    return false;
  }
  return true;
}

}  // namespace

bool parseLiteral(std::string_view text, Literal* out, LiteralError* error) {
  *out = Literal{};
  return LiteralParser(text).parseAll(out, error);
}

bool decodeIntList(std::string_view text, std::vector<long long>* out, LiteralError* error) {
  Literal literal;
  if (!parseLiteral(text, &literal, error) || !expectSequence(literal, error)) return false;
  out->clear();
  for (const Literal& item : literal.items) {
    if (item.kind != Literal::Kind::Number || !item.integral) {
      if (error) *error = {"expected an integer", item.offset};
      return false;
    }
    // Integers beyond +-2^53 are not held exactly by the double the literal was read into;
    // beyond +-2^63 converting it would be undefined (found by fuzz_spec).
    constexpr double kLimit = 9007199254740992.0;  // 2^53
    if (!(std::fabs(item.number) <= kLimit)) {
      if (error) *error = {"integer out of range (at most 2^53 in magnitude)", item.offset};
      return false;
    }
    out->push_back(static_cast<long long>(item.number));
  }
  return true;
}

bool decodeNumberList(std::string_view text, std::vector<double>* out, LiteralError* error) {
  Literal literal;
  if (!parseLiteral(text, &literal, error) || !expectSequence(literal, error)) return false;
  out->clear();
  for (const Literal& item : literal.items) {
    if (item.kind != Literal::Kind::Number) {
      if (error) *error = {"expected a number", item.offset};
      return false;
    }
    out->push_back(item.number);
  }
  return true;
}

bool decodePairList(std::string_view text, std::vector<std::pair<double, double>>* out,
                    LiteralError* error) {
  Literal literal;
  if (!parseLiteral(text, &literal, error) || !expectSequence(literal, error)) return false;
  out->clear();
  for (const Literal& item : literal.items) {
    if (item.kind == Literal::Kind::Number || item.items.size() != 2 ||
        item.items[0].kind != Literal::Kind::Number ||
        item.items[1].kind != Literal::Kind::Number) {
      if (error) *error = {"expected a pair of numbers such as (1.0, 2.0)", item.offset};
      return false;
    }
    out->emplace_back(item.items[0].number, item.items[1].number);
  }
  return true;
}

}  // namespace mrcnn::spec
