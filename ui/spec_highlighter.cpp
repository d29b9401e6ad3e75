#include "ui/spec_highlighter.h"

#include <QTextDocument>

namespace mrcnn::ui {
namespace {

bool isIdentifierStart(QChar c) {
  return c.isLetter() || c == u'_';
}
bool isIdentifierChar(QChar c) {
  return c.isLetterOrNumber() || c == u'_' || c == u'.';
}

}  // namespace

SpecHighlighter::SpecHighlighter(QTextDocument* document, bool dark)
    : QSyntaxHighlighter(document) {
  const auto make = [](const QColor& colour, bool bold = false, bool italic = false) {
    QTextCharFormat f;
    f.setForeground(colour);
    if (bold) f.setFontWeight(QFont::Bold);
    f.setFontItalic(italic);
    return f;
  };
  formats_[Role::FieldName] = make(dark ? QColor(0x9c, 0xdc, 0xfe) : QColor(0x00, 0x4d, 0x99));
  formats_[Role::BlockName] =
      make(dark ? QColor(0xc5, 0x86, 0xc0) : QColor(0x7a, 0x1f, 0x99), /*bold=*/true);
  formats_[Role::String] = make(dark ? QColor(0xce, 0x91, 0x78) : QColor(0x0a, 0x7a, 0x2f));
  formats_[Role::Number] = make(dark ? QColor(0xb5, 0xce, 0xa8) : QColor(0xa3, 0x4a, 0x00));
  formats_[Role::Boolean] = make(dark ? QColor(0x56, 0x9c, 0xd6) : QColor(0x00, 0x7a, 0x7a));
  formats_[Role::Comment] =
      make(dark ? QColor(0x6a, 0x99, 0x55) : QColor(0x70, 0x70, 0x70), false, /*italic=*/true);
  formats_[Role::Brace] = make(dark ? QColor(0xd4, 0xd4, 0xd4) : QColor(0x30, 0x30, 0x30), true);
  error_format_.setUnderlineStyle(QTextCharFormat::WaveUnderline);
  error_format_.setUnderlineColor(QColor(0xe0, 0x20, 0x20));
}

void SpecHighlighter::setErrorLines(const QMap<int, QString>& messages) {
  errors_ = messages;
  rehighlight();
}

void SpecHighlighter::highlightBlock(const QString& text) {
  const qsizetype n = text.size();
  qsizetype i = 0;
  while (i < n) {
    const QChar c = text[i];
    if (c.isSpace()) {
      ++i;
    } else if (c == u'#') {
      setFormat(static_cast<int>(i), static_cast<int>(n - i), formats_[Role::Comment]);
      break;
    } else if (c == u'"' || c == u'\'') {
      qsizetype end = i + 1;
      while (end < n && text[end] != c)
        end += text[end] == u'\\' ? 2 : 1;
      end = std::min(n, end + 1);
      setFormat(static_cast<int>(i), static_cast<int>(end - i), formats_[Role::String]);
      i = end;
    } else if (isIdentifierStart(c)) {
      qsizetype end = i;
      while (end < n && isIdentifierChar(text[end]))
        ++end;
      qsizetype next = end;
      while (next < n && text[next].isSpace())
        ++next;
      const QChar follow = next < n ? text[next] : QChar();
      // A name before ':' is a field, before '{' a block; anything else is a value.
      Role role = Role::Boolean;
      if (follow == u'{' || follow == u'<') {
        role = Role::BlockName;
      } else if (follow == u':') {
        role = Role::FieldName;
      }
      setFormat(static_cast<int>(i), static_cast<int>(end - i), formats_[role]);
      i = end;
    } else if (c.isDigit() || ((c == u'-' || c == u'+' || c == u'.') && i + 1 < n &&
                               (text[i + 1].isDigit() || text[i + 1] == u'.'))) {
      qsizetype end = i + 1;
      while (end < n && (text[end].isLetterOrNumber() || text[end] == u'.' ||
                         ((text[end] == u'-' || text[end] == u'+') &&
                          (text[end - 1] == u'e' || text[end - 1] == u'E')))) {
        ++end;
      }
      setFormat(static_cast<int>(i), static_cast<int>(end - i), formats_[Role::Number]);
      i = end;
    } else {
      if (c == u'{' || c == u'}' || c == u'<' || c == u'>') {
        setFormat(static_cast<int>(i), 1, formats_[Role::Brace]);
      }
      ++i;
    }
  }
  // Underline the whole line of an error, over the colours above.
  const int line = currentBlock().blockNumber() + 1;
  if (errors_.contains(line) && n > 0) {
    for (qsizetype k = 0; k < n; ++k) {
      QTextCharFormat f = format(static_cast<int>(k));
      f.setUnderlineStyle(error_format_.underlineStyle());
      f.setUnderlineColor(error_format_.underlineColor());
      f.setToolTip(errors_.value(line));
      setFormat(static_cast<int>(k), 1, f);
    }
  }
}

}  // namespace mrcnn::ui
