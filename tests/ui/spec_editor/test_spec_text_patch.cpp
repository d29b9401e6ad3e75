// The text patcher over characters beyond ASCII: it reads the spec tokenizer's UTF-8 byte
// offsets (specs/spec_tokens.h) and edits a UTF-16 QString, so a character of several bytes
// or of two UTF-16 units before a field must not shift the edit. The patcher's own rules
// (in place, indentation, new blocks, removal) are tested with the editor.
#include <QtTest>

#include "ui/spec_editor/spec_text_patch.h"

using namespace mrcnn::ui;

class SpecTextPatchTest : public QObject {
  Q_OBJECT

 private slots:
  void editsLandAfterCharactersBeyondAscii() {
    const QString text = u"run_name: \"\u00e9\U0001F600\"  # \u00fcn\u00efcode\nseed: 1\n"_qs;
    QCOMPARE(spectext::setField(text, u"seed"_qs, u"7"_qs),
             u"run_name: \"\u00e9\U0001F600\"  # \u00fcn\u00efcode\nseed: 7\n"_qs);
    QCOMPARE(spectext::setField(text, u"run_name"_qs, u"\"x\""_qs),
             u"run_name: \"x\"  # \u00fcn\u00efcode\nseed: 1\n"_qs);
    QCOMPARE(spectext::clearField(text, u"run_name"_qs), u"seed: 1\n"_qs);
    const QList<spectext::Statement> seed = spectext::findField(text, u"seed"_qs);
    QCOMPARE(seed.size(), 1);
    QCOMPARE(text.mid(seed[0].value_begin, seed[0].value_end - seed[0].value_begin), u"1"_qs);
  }

  // A no-break space pasted after the colon separates, as it shows; a stray character
  // beyond ASCII is a value of its own and is replaced whole, never cut in half.
  void charactersBeyondAsciiAreNeverCut() {
    QCOMPARE(spectext::setField(u"seed:\u00a01\n"_qs, u"seed"_qs, u"7"_qs), u"seed:\u00a07\n"_qs);
    QCOMPARE(spectext::setField(u"seed: \U0001F600\n"_qs, u"seed"_qs, u"7"_qs), u"seed: 7\n"_qs);
    QCOMPARE(spectext::setField(u"\ufeffseed: 1\n"_qs, u"seed"_qs, u"7"_qs), u"\ufeffseed: 7\n"_qs);
  }
};

QTEST_APPLESS_MAIN(SpecTextPatchTest)
#include "test_spec_text_patch.moc"
