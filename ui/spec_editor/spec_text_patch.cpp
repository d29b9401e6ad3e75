#include "ui/spec_editor/spec_text_patch.h"

#include <algorithm>
#include <string>
#include <vector>

#include "specs/spec_tokens.h"

namespace mrcnn::ui::spectext {
namespace {

// A token of the spec tokenizer (specs/spec_tokens.h), which reads UTF-8 bytes, with its
// bounds in the QString's UTF-16 units, where statements and edits are.
struct Token {
  spec::Token::Kind kind;
  qsizetype begin;
  qsizetype end;
};

QList<Token> tokenize(const QString& text) {
  // The text in UTF-8, encoded here rather than by toUtf8() so that every byte's unit is
  // known: unit[b] is the index of the UTF-16 unit byte b comes from, unit[size] the end. A
  // lone surrogate (half a character being typed) takes 3 bytes like any other.
  std::string utf8;
  std::vector<qsizetype> unit;
  utf8.reserve(static_cast<std::size_t>(text.size()));
  unit.reserve(static_cast<std::size_t>(text.size()) + 1);
  for (qsizetype i = 0; i < text.size(); ++i) {
    const qsizetype from = i;
    char32_t c = text[i].unicode();
    if (text[i].isHighSurrogate() && i + 1 < text.size() && text[i + 1].isLowSurrogate()) {
      c = QChar::surrogateToUcs4(text[i], text[i + 1]);
      ++i;
    }
    const auto put = [&](char32_t byte) {
      utf8.push_back(static_cast<char>(byte));
      unit.push_back(from);
    };
    if (c < 0x80) {
      put(c);
    } else if (c < 0x800) {
      put(0xC0 | c >> 6);
      put(0x80 | (c & 0x3F));
    } else if (c < 0x10000) {
      put(0xE0 | c >> 12);
      put(0x80 | (c >> 6 & 0x3F));
      put(0x80 | (c & 0x3F));
    } else {
      put(0xF0 | c >> 18);
      put(0x80 | (c >> 12 & 0x3F));
      put(0x80 | (c >> 6 & 0x3F));
      put(0x80 | (c & 0x3F));
    }
  }
  unit.push_back(text.size());
  QList<Token> tokens;
  for (const spec::Token& t : spec::tokenize(utf8))
    tokens.push_back({t.kind, unit[t.begin], unit[t.end]});
  return tokens;
}

class Parser {
 public:
  Parser(const QString& text) : text_(text), tokens_(tokenize(text)) {}

  QList<Statement> parse() {
    QList<Statement> top;
    while (at_ < tokens_.size()) {
      if (isSymbol(at_, u'}') || isSymbol(at_, u'>')) {
        ++at_;  // a stray closing brace: skip it, the validator reports it
        continue;
      }
      statement(&top);
    }
    return top;
  }

 private:
  bool isSymbol(qsizetype i, QChar c) const {
    return i < tokens_.size() && tokens_[i].kind == spec::Token::Kind::Symbol &&
           text_[tokens_[i].begin] == c;
  }

  // Reads statements until the closing brace of the current block (left unconsumed).
  void body(QList<Statement>* out) {
    while (at_ < tokens_.size() && !isSymbol(at_, u'}') && !isSymbol(at_, u'>'))
      statement(out);
  }

  void statement(QList<Statement>* out) {
    const Token& first = tokens_[at_];
    if (first.kind != spec::Token::Kind::Identifier) {
      ++at_;  // not a statement: skip the token
      return;
    }
    Statement s;
    s.name = text_.mid(first.begin, first.end - first.begin);
    s.begin = first.begin;
    s.end = first.end;
    s.value_begin = s.value_end = first.end;
    ++at_;
    if (isSymbol(at_, u':')) s.value_begin = s.value_end = tokens_[at_++].end;
    if (isSymbol(at_, u'{') || isSymbol(at_, u'<')) {
      s.block = true;
      s.value_begin = tokens_[at_].end;
      ++at_;
      body(&s.children);
      if (at_ < tokens_.size()) {
        s.close = tokens_[at_].begin;
        s.value_end = s.close;
        s.end = tokens_[at_].end;
        ++at_;
      } else {
        s.value_end = s.end = text_.size();
      }
    } else if (isSymbol(at_, u'[')) {
      s.value_begin = tokens_[at_].begin;
      int depth = 0;
      while (at_ < tokens_.size()) {
        if (isSymbol(at_, u'[')) ++depth;
        if (isSymbol(at_, u']') && --depth == 0) break;
        if (isSymbol(at_, u'}') || isSymbol(at_, u'>')) break;  // unclosed list
        ++at_;
      }
      const bool closed = at_ < tokens_.size() && isSymbol(at_, u']');
      s.value_end = s.end = closed ? tokens_[at_++].end : tokens_[at_ - 1].end;
    } else if (at_ < tokens_.size() && !isSymbol(at_, u'}') && !isSymbol(at_, u'>') &&
               !(tokens_[at_].kind == spec::Token::Kind::Identifier && isSymbol(at_ + 1, u':'))) {
      s.value_begin = tokens_[at_].begin;
      s.value_end = s.end = tokens_[at_].end;
      const bool string = tokens_[at_].kind == spec::Token::Kind::String;
      ++at_;
      while (string && at_ < tokens_.size() && tokens_[at_].kind == spec::Token::Kind::String) {
        s.value_end = s.end = tokens_[at_].end;  // adjacent strings concatenate
        ++at_;
      }
    }
    if (isSymbol(at_, u';') || isSymbol(at_, u',')) s.end = tokens_[at_++].end;
    out->push_back(std::move(s));
  }

  const QString& text_;
  QList<Token> tokens_;
  qsizetype at_ = 0;
};

void collect(const QList<Statement>& level, const QStringList& parts, qsizetype depth,
             QList<Statement>* out) {
  for (const Statement& s : level) {
    if (s.name != parts[depth]) continue;
    if (depth + 1 == parts.size()) {
      out->push_back(s);
    } else if (s.block) {
      collect(s.children, parts, depth + 1, out);
    }
  }
}

qsizetype lineStart(const QString& text, qsizetype pos) {
  const qsizetype nl = pos > 0 ? text.lastIndexOf(u'\n', pos - 1) : -1;
  return nl + 1;
}

// The end of the line holding `pos` (the '\n' or the end of the text).
qsizetype lineEnd(const QString& text, qsizetype pos) {
  const qsizetype nl = text.indexOf(u'\n', pos);
  return nl < 0 ? text.size() : nl;
}

bool blank(const QString& text, qsizetype from, qsizetype to) {
  for (qsizetype i = from; i < to; ++i) {
    if (!text[i].isSpace()) return false;
  }
  return true;
}

// Only whitespace, or a comment, from `from` to the end of its line.
bool restOfLineEmpty(const QString& text, qsizetype from) {
  const qsizetype end = lineEnd(text, from);
  for (qsizetype i = from; i < end; ++i) {
    if (text[i] == u'#') return true;
    if (!text[i].isSpace()) return false;
  }
  return true;
}

QString indentOf(const QString& text, qsizetype pos) {
  const qsizetype start = lineStart(text, pos);
  qsizetype i = start;
  while (i < text.size() && (text[i] == u' ' || text[i] == u'\t'))
    ++i;
  return text.mid(start, i - start);
}

QString removeStatement(QString text, const Statement& s) {
  const qsizetype from = lineStart(text, s.begin);
  if (blank(text, from, s.begin) && restOfLineEmpty(text, s.end)) {
    const qsizetype to = lineEnd(text, s.end);
    return text.remove(from, std::min(text.size(), to + 1) - from);
  }
  qsizetype to = s.end;
  while (to < text.size() && (text[to] == u' ' || text[to] == u'\t'))
    ++to;
  return text.remove(s.begin, to - s.begin);
}

QString indented(const QStringList& lines, const QString& indent) {
  QString out;
  for (const QString& line : lines)
    out += indent + line + u'\n';
  return out;
}

// Adds `lines` (one statement, possibly a block over several lines, indented relative to
// each other with two spaces) as the last statement of the block at `parent`.
QString insertStatement(const QString& text, const QStringList& parent, const QStringList& lines) {
  if (parent.isEmpty()) {
    const QList<Statement> top = parseStatements(text);
    QString out = text;
    if (!lines.front().endsWith(u'{')) {
      // A scalar goes after the last top-level scalar, where TAO specs keep them.
      for (auto it = top.rbegin(); it != top.rend(); ++it) {
        if (it->block || !restOfLineEmpty(text, it->end)) continue;
        const qsizetype at = std::min(text.size(), lineEnd(text, it->end) + 1);
        QString piece = indented(lines, indentOf(text, it->begin));
        if (at == text.size() && !text.endsWith(u'\n')) piece.prepend(u'\n');
        return out.insert(at, piece);
      }
    }
    if (!out.isEmpty() && !out.endsWith(u'\n')) out += u'\n';
    if (!out.isEmpty() && lines.front().endsWith(u'{') && !out.endsWith(u"\n\n"_qs)) out += u'\n';
    return out + indented(lines, {});
  }
  const QList<Statement> found = findField(text, parent.join(u'.'));
  const Statement* block = nullptr;
  for (const Statement& s : found) {
    if (s.block) block = &s;
  }
  if (!block) {
    QStringList wrapped{parent.back() + u" {"_qs};
    for (const QString& line : lines)
      wrapped.push_back(u"  "_qs + line);
    wrapped.push_back(u"}"_qs);
    return insertStatement(text, parent.mid(0, parent.size() - 1), wrapped);
  }
  QString out = text;
  const qsizetype close = block->close >= 0 ? block->close : text.size();
  QString indent = indentOf(text, block->begin) + u"  "_qs;
  if (!block->children.isEmpty()) {
    const Statement& last = block->children.back();
    if (blank(text, lineStart(text, last.begin), last.begin)) indent = indentOf(text, last.begin);
    if (restOfLineEmpty(text, last.end) && lineEnd(text, last.end) < close) {
      return out.insert(lineEnd(text, last.end) + 1, indented(lines, indent));
    }
  }
  if (block->close >= 0 && blank(text, lineStart(text, close), close) &&
      lineStart(text, close) > block->value_begin) {
    return out.insert(lineStart(text, close), indented(lines, indent));
  }
  if (block->close < 0) {
    if (!out.endsWith(u'\n')) out += u'\n';
    return out + indented(lines, indent);
  }
  // `name { a: 1 }` on one line, or the brace right after the last value.
  if (lines.size() == 1) return out.insert(close, lines.front() + u' ');
  return out.insert(close, u'\n' + indented(lines, indent) + indentOf(text, block->begin));
}

}  // namespace

QList<Statement> parseStatements(const QString& text) {
  return Parser(text).parse();
}

QList<Statement> findField(const QString& text, const QString& path) {
  QList<Statement> out;
  const QStringList parts = path.split(u'.');
  if (path.isEmpty()) return out;
  collect(parseStatements(text), parts, 0, &out);
  return out;
}

QString setField(const QString& text, const QString& path, const QString& literal) {
  const QList<Statement> found = findField(text, path);
  const Statement* first = nullptr;
  for (const Statement& s : found) {
    if (!s.block) {
      first = &s;
      break;
    }
  }
  if (!first) {
    QStringList parts = path.split(u'.');
    const QString name = parts.takeLast();
    return insertStatement(text, parts, {name + u": "_qs + literal});
  }
  QString out = text;
  // Later occurrences first, so that earlier positions stay valid.
  for (auto it = found.rbegin(); it != found.rend(); ++it) {
    if (&*it == first || it->block) continue;
    out = removeStatement(out, *it);
  }
  if (first->value_begin == first->value_end && first->value_begin > 0 &&
      text[first->value_begin - 1] == u':') {
    return out.insert(first->value_begin, u' ' + literal);  // `name:` with its value missing
  }
  return out.replace(first->value_begin, first->value_end - first->value_begin, literal);
}

QString clearField(const QString& text, const QString& path) {
  QString out = text;
  const QList<Statement> found = findField(text, path);
  for (auto it = found.rbegin(); it != found.rend(); ++it)
    out = removeStatement(out, *it);
  return out;
}

QString ensureBlock(const QString& text, const QString& path) {
  for (const Statement& s : findField(text, path)) {
    if (s.block) return text;
  }
  QStringList parts = path.split(u'.');
  const QString name = parts.takeLast();
  return insertStatement(text, parts, {name + u" {"_qs, u"}"_qs});
}

QString quoted(const QString& value) {
  QString out = u"\""_qs;
  for (const QChar c : value) {
    if (c == u'"' || c == u'\\') {
      out += u'\\';
      out += c;
    } else if (c == u'\n') {
      out += u"\\n"_qs;
    } else {
      out += c;
    }
  }
  return out + u'"';
}

}  // namespace mrcnn::ui::spectext
