// The tokens of spec text (protobuf text format), for the two readers that need positions
// protobuf's own parser does not give: the spec loader (spec.cpp: the statement an error sits
// in, the blocks around it, where a string value starts) and the spec editor's text patcher
// (ui/spec_editor/spec_text_patch.cpp: the statement of a field, to rewrite only that). One
// tokenizer, so that both split a text the same way.
//
// A light tokenizer, not a validator: it never fails, and broken text (an unclosed string, a
// stray character) still gives tokens as far as it makes sense. Comments are dropped;
// a string runs to its closing quote or the end of its line.
//
// The text is UTF-8 and positions are byte offsets. ASCII follows protobuf's classes, never
// the C locale's (the GUI sets one). Beyond ASCII, which protobuf accepts only inside strings
// and comments: the Unicode spaces (the Separator categories and U+0085, as QChar::isSpace)
// separate tokens, and any other character is a Symbol of its own, all its bytes, so that a
// token never ends inside a character (the editor maps offsets to UTF-16) and a stray
// character (a byte order mark, a typographic quote) never joins the name beside it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

namespace mrcnn::spec {

struct Token {
  // Identifier: a name, dotted or not (`a.b`), or a bare word (`true`, an enum value).
  // Number: starts with a digit, a sign or a dot and runs over letters, digits, dots and an
  // exponent's sign (`-1.5e-3`, `0x1F`, `-inf`). String: with its quotes. Symbol: one
  // character (`{`, `:`, `[`...; a character beyond ASCII is several bytes).
  enum class Kind : uint8_t { Identifier, Number, String, Symbol };
  Kind kind;
  std::size_t begin;      // byte offset of the first byte
  std::size_t end;        // byte offset past the last byte
  std::string_view text;  // text[begin, end)

  bool isSymbol(char c) const { return kind == Kind::Symbol && text[0] == c; }
};

// The tokens of `text`, in order. They view `text`: keep it alive while they are used.
std::vector<Token> tokenize(std::string_view text);

}  // namespace mrcnn::spec
