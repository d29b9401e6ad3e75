// The spec editor's colouring: each kind of token gets its format, strings and comments
// are not confused, and error lines are underlined.
#include <QTextBlock>
#include <QTextDocument>
#include <QTextLayout>
#include <QtTest>

#include "ui/spec_highlighter.h"

using mrcnn::ui::SpecHighlighter;
using Role = SpecHighlighter::Role;

namespace {

// The format applied at `column` of `line` (0-based).
QTextCharFormat formatAt(const QTextDocument& doc, int line, int column) {
  const QTextBlock block = doc.findBlockByNumber(line);
  for (const QTextLayout::FormatRange& r : block.layout()->formats()) {
    if (column >= r.start && column < r.start + r.length) return r.format;
  }
  return {};
}

}  // namespace

class SpecHighlighterTest : public QObject {
  Q_OBJECT
 private slots:
  void coloursEachKindOfToken() {
    QTextDocument doc;
    doc.setPlainText(
        "seed: 123  # the seed\n"
        "maskrcnn_config {\n"
        "  freeze_blocks: \"[0, 1]  # not a comment\"\n"
        "  freeze_bn: True\n"
        "  rpn_min_size: -.5e-3\n"
        "}\n");
    SpecHighlighter h(&doc);
    h.rehighlight();  // the first pass is otherwise deferred to the event loop
    const auto is = [&](int line, int column, Role role) {
      return formatAt(doc, line, column).foreground() == h.roleFormat(role).foreground() &&
             formatAt(doc, line, column).fontWeight() == h.roleFormat(role).fontWeight();
    };
    QVERIFY(is(0, 0, Role::FieldName));
    QVERIFY(is(0, 6, Role::Number));
    QVERIFY(is(0, 11, Role::Comment));
    QVERIFY(is(1, 0, Role::BlockName));
    QVERIFY(is(1, 16, Role::Brace));
    QVERIFY(is(2, 17, Role::String));
    QVERIFY(is(2, 27, Role::String));  // '#' inside a string stays string
    QVERIFY(is(3, 13, Role::Boolean));
    QVERIFY(is(4, 16, Role::Number));
    QVERIFY(is(4, 19, Role::Number));
    QVERIFY(is(5, 0, Role::Brace));
  }

  void underlinesErrorLines() {
    QTextDocument doc;
    doc.setPlainText("seed: 1\nnlayers: 19\nmomentum: 0.9\n");
    SpecHighlighter h(&doc);
    QVERIFY(formatAt(doc, 1, 0).underlineStyle() != QTextCharFormat::WaveUnderline);
    h.setErrorLines({{2, "unsupported ResNet depth 19"}});
    const QTextCharFormat marked = formatAt(doc, 1, 3);
    QCOMPARE(marked.underlineStyle(), QTextCharFormat::WaveUnderline);
    QCOMPARE(marked.toolTip(), QString("unsupported ResNet depth 19"));
    QVERIFY(formatAt(doc, 0, 0).underlineStyle() != QTextCharFormat::WaveUnderline);
    h.setErrorLines({});
    QVERIFY(formatAt(doc, 1, 3).underlineStyle() != QTextCharFormat::WaveUnderline);
  }
};

QTEST_MAIN(SpecHighlighterTest)
#include "test_spec_highlighter.moc"
