// Edits of one field in the text of a spec, for the form side of the spec editor.
//
// The editor keeps the text as the user (or TAO) wrote it: comments, tabs, True/False and
// the order of fields survive a form edit. A form edit rewrites only the statement of the
// field it changed: the value of an existing `name: value` is replaced in place; an absent
// field is added as one line at the end of its block (creating the enclosing blocks when
// they are missing), indented like its neighbours; a field reset to its default has its
// statement removed (with its line when the statement is alone on it). Nothing else moves.
#pragma once

#include <QList>
#include <QString>
#include <QStringList>

namespace mrcnn::ui::spectext {

// One statement of protobuf text: `name: value`, `name { ... }` or `name: [a, b]`.
struct Statement {
  QString name;
  qsizetype begin = 0;  // the name
  qsizetype end = 0;    // past the value or the closing brace, and a ';' or ',' after it
  bool block = false;
  qsizetype value_begin = 0;  // scalars and lists: the value as written
  qsizetype value_end = 0;
  qsizetype close = -1;  // blocks: the closing '}' or '>' (-1 when never closed)
  QList<Statement> children;
};

// The statements of `text`, nested by block. Broken text is read as far as it makes sense.
QList<Statement> parseStatements(const QString& text);

// The statements of a dotted path ("data_config.shapes_dataset.seed"), in text order.
QList<Statement> findField(const QString& text, const QString& path);

// `text` with the field at `path` set to `literal` (protobuf text: 12, 0.5, true, "s",
// ["a", "b"]). Repeated occurrences collapse into the first one.
QString setField(const QString& text, const QString& path, const QString& literal);

// `text` with every statement of `path` removed; a block is removed with its contents.
QString clearField(const QString& text, const QString& path);

// `text` with an empty block at `path` added when no block of that name exists.
QString ensureBlock(const QString& text, const QString& path);

// A protobuf text string literal: quotes, backslashes and newlines escaped.
QString quoted(const QString& value);

}  // namespace mrcnn::ui::spectext
