// Syntax colouring of experiment specs (protobuf text, TAO spellings included) for the spec
// editor, with the lines that have errors underlined.
#pragma once

#include <QMap>
#include <QSyntaxHighlighter>
#include <QTextCharFormat>

namespace mrcnn::ui {

class SpecHighlighter : public QSyntaxHighlighter {
  Q_OBJECT

 public:
  // Boolean also covers other bare constants (enum values such as WandB's mode).
  enum class Role { FieldName, BlockName, String, Number, Boolean, Comment, Brace };

  // `dark` picks colours that read on a dark background.
  explicit SpecHighlighter(QTextDocument* document, bool dark = false);

  // Lines (1-based) to underline, with the message shown for them; replaces earlier marks.
  void setErrorLines(const QMap<int, QString>& messages);
  const QMap<int, QString>& errorLines() const { return errors_; }

  QTextCharFormat roleFormat(Role role) const { return formats_.value(role); }
  QTextCharFormat errorFormat() const { return error_format_; }

 protected:
  void highlightBlock(const QString& text) override;

 private:
  QMap<Role, QTextCharFormat> formats_;
  QTextCharFormat error_format_;
  QMap<int, QString> errors_;
};

}  // namespace mrcnn::ui
