// The spec tokenizer both the spec loader and the editor's text patcher read through: kinds
// and byte offsets on the forms a spec takes, broken text read on, and the rule beyond ASCII
// (the editor maps these offsets to UTF-16: a token ending inside a character would cut it).
#include <QtTest>
#include <string_view>
#include <vector>

#include "specs/spec_tokens.h"

using mrcnn::spec::Token;
using mrcnn::spec::tokenize;

namespace {

// "I:name Y:{ ..." — kind letter and text of each token, for readable comparisons.
QString describe(std::string_view text) {
  QStringList out;
  for (const Token& t : tokenize(text)) {
    const char* kind = t.kind == Token::Kind::Identifier ? "I"
                       : t.kind == Token::Kind::Number   ? "N"
                       : t.kind == Token::Kind::String   ? "S"
                                                         : "Y";
    out.push_back(QString::fromLatin1(kind) + u':' +
                  QString::fromUtf8(t.text.data(), static_cast<qsizetype>(t.text.size())));
  }
  return out.join(u' ');
}

}  // namespace

class SpecTokensTest : public QObject {
  Q_OBJECT

 private slots:
  void statementsOfASpec() {
    QCOMPARE(describe("data_config {\n  image_size: \"(832, 1344)\"  # h, w\n"
                      "  min_size: -1.5e-3; max_level: 6 }"),
             u"I:data_config Y:{ I:image_size Y:: S:\"(832, 1344)\" I:min_size Y:: N:-1.5e-3 "
             u"Y:; I:max_level Y:: N:6 Y:}"_qs);
    QCOMPARE(describe("model_config.arch: resnet\nlr: [.5, +1e+2, 0x1F]"),
             u"I:model_config.arch Y:: I:resnet I:lr Y:: Y:[ N:.5 Y:, N:+1e+2 Y:, N:0x1F Y:]"_qs);
    const std::string_view text = "  seed:\t7";
    const std::vector<Token> tokens = tokenize(text);
    QCOMPARE(tokens.size(), std::size_t{3});
    QCOMPARE(tokens[0].begin, std::size_t{2});
    QCOMPARE(tokens[0].end, std::size_t{6});
    QVERIFY(tokens[1].isSymbol(':'));
    QCOMPARE(tokens[2].begin, std::size_t{8});
    for (const Token& t : tokens)
      QCOMPARE(t.text, text.substr(t.begin, t.end - t.begin));
  }

  // An unclosed string ends with its line (newline included), so one missing quote does
  // not swallow the rest of the file; an escaped quote does not end a string.
  void brokenTextReadsOn() {
    QCOMPARE(describe("a: \"open\nb: 'x\\'y' c: \"\\\""),
             u"I:a Y:: S:\"open\n I:b Y:: S:'x\\'y' I:c Y:: S:\"\\\""_qs);
    QCOMPARE(describe("# only a comment"), QString());
    QCOMPARE(describe("a: 1 # b: 2\nc"), u"I:a Y:: N:1 I:c"_qs);
    QCOMPARE(describe("}} @ ="), u"Y:} Y:} Y:@ Y:="_qs);
  }

  // Beyond ASCII: a character is one token of all its bytes, never part of a name (protobuf
  // takes none there), and the Unicode spaces a pasted text brings separate tokens.
  void charactersBeyondAsciiStayWhole() {
    QCOMPARE(describe("na\xC3\xA9x: 1"), u"I:na Y:\u00e9 I:x Y:: N:1"_qs);
    QCOMPARE(describe("seed:\xC2\xA0"
                      "7\xE2\x80\xAF"
                      "b\xE3\x80\x80"
                      "c"),
             u"I:seed Y:: N:7 I:b I:c"_qs);
    QCOMPARE(describe("seed: \xE2\x80\x9Cx\xE2\x80\x9D"), u"I:seed Y:: Y:\u201c I:x Y:\u201d"_qs);
    // A byte order mark (Windows editors write one) stays off the first name.
    const std::vector<Token> bom = tokenize("\xEF\xBB\xBFseed: 1");
    QCOMPARE(bom.size(), std::size_t{4});
    QVERIFY(bom[0].kind == Token::Kind::Symbol && bom[0].end == 3);
    QCOMPARE(bom[1].text, std::string_view("seed"));
    const std::vector<Token> emoji = tokenize("a: \xF0\x9F\x98\x80");
    QCOMPARE(emoji.back().begin, std::size_t{3});
    QCOMPARE(emoji.back().end, std::size_t{7});
    // Bytes that are not UTF-8 are symbols one byte each; strings and comments keep theirs.
    QCOMPARE(tokenize("\xFF\xC3").size(), std::size_t{2});
    QCOMPARE(describe("s: \"\xC3\xA9\" # \xC3\xA9"), u"I:s Y:: S:\"\u00e9\""_qs);
  }
};

QTEST_APPLESS_MAIN(SpecTokensTest)
#include "test_spec_tokens.moc"
