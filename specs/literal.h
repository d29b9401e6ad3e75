// Decoding of the Python-style literals that TAO specs keep in string fields:
// "[60000, 80000]", "(832, 1344)", "[(1.0, 1.0), (1.4, 0.7)]", "(10., 10., 5., 5.)".
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace mrcnn::spec {

// A number or a bracketed sequence of literals; `offset` is where it starts in the text.
struct Literal {
  enum class Kind { Number, List, Tuple };
  Kind kind = Kind::Number;
  double number = 0;
  bool integral = false;  // written without a decimal point or exponent
  std::vector<Literal> items;
  std::size_t offset = 0;
};

// A decoding failure: what was expected, and the byte offset inside the string.
struct LiteralError {
  std::string message;
  std::size_t offset = 0;
};

// Each decoder returns false and fills `error` when the text does not have the asked shape.
bool parseLiteral(std::string_view text, Literal* out, LiteralError* error);

// "[1, 2, 3]" or "(1, 2, 3)"; integers only. Empty sequences are accepted.
bool decodeIntList(std::string_view text, std::vector<long long>* out, LiteralError* error);
// Numbers, integral or not.
bool decodeNumberList(std::string_view text, std::vector<double>* out, LiteralError* error);
// A sequence of two-number sequences: "[(1.0, 1.0), (1.4, 0.7)]".
bool decodePairList(std::string_view text, std::vector<std::pair<double, double>>* out,
                    LiteralError* error);

}  // namespace mrcnn::spec
