#include <QtTest>

#include "specs/literal.h"
#include "tests/specs/test_classes.h"

using namespace mrcnn::spec;

void LiteralTest::decodesTaoLists() {
  LiteralError e;
  std::vector<long long> ints;
  QVERIFY(decodeIntList("[60000, 80000]", &ints, &e));
  QCOMPARE(ints, (std::vector<long long>{60000, 80000}));
  QVERIFY(decodeIntList("(832, 1344)", &ints, &e));
  QCOMPARE(ints, (std::vector<long long>{832, 1344}));
  QVERIFY(decodeIntList("[0,1]", &ints, &e));
  QCOMPARE(ints, (std::vector<long long>{0, 1}));
  QVERIFY(decodeIntList("[]", &ints, &e));
  QVERIFY(ints.empty());
  QVERIFY(decodeIntList(" [ 1 , 2 , ] ", &ints, &e));  // Python allows a trailing comma
  QCOMPARE(ints.size(), std::size_t{2});

  std::vector<double> numbers;
  QVERIFY(decodeNumberList("(10., 10., 5., 5.)", &numbers, &e));
  QCOMPARE(numbers, (std::vector<double>{10, 10, 5, 5}));
  QVERIFY(decodeNumberList("[0.1, 0.02, 2e-3, +1, -.5]", &numbers, &e));
  QCOMPARE(numbers, (std::vector<double>{0.1, 0.02, 0.002, 1, -0.5}));

  std::vector<std::pair<double, double>> pairs;
  QVERIFY(decodePairList("[(1.0, 1.0), (1.4, 0.7), (0.7, 1.4)]", &pairs, &e));
  QCOMPARE(pairs.size(), std::size_t{3});
  QCOMPARE(pairs[1].first, 1.4);
  QCOMPARE(pairs[1].second, 0.7);
  QVERIFY(decodePairList("[[2, 1]]", &pairs, &e));
  QCOMPARE(pairs[0].first, 2.0);
}

void LiteralTest::rejectsMalformedWithOffset_data() {
  QTest::addColumn<QString>("text");
  QTest::addColumn<int>("kind");  // 0 int list, 1 number list, 2 pair list
  QTest::addColumn<int>("offset");
  QTest::addColumn<QString>("message");
  QTest::newRow("unclosed") << "[1, 2" << 0 << 5 << "missing ']'";
  QTest::newRow("no comma") << "(832 1344)" << 0 << 5 << "expected ','";
  QTest::newRow("float in int list") << "[1, 2.5]" << 0 << 4 << "expected an integer";
  QTest::newRow("huge int") << "(000444444444444444444444444444444, 1)" << 0 << 1
                            << "integer out of range";
  QTest::newRow("word") << "[1, abc]" << 1 << 4 << "expected a number";
  QTest::newRow("scalar") << "42" << 1 << 0 << "expected a list";
  QTest::newRow("empty") << "" << 1 << 0 << "empty value";
  QTest::newRow("trailing") << "[1] x" << 1 << 4 << "unexpected 'x'";
  QTest::newRow("pair of three") << "[(1, 2), (1, 2, 3)]" << 2 << 9 << "pair of numbers";
  QTest::newRow("bad exponent") << "[1e]" << 1 << 1 << "malformed number";
  QTest::newRow("lone sign") << "[-]" << 1 << 1 << "malformed number";
}

void LiteralTest::rejectsMalformedWithOffset() {
  QFETCH(QString, text);
  QFETCH(int, kind);
  QFETCH(int, offset);
  QFETCH(QString, message);
  LiteralError e;
  const std::string s = text.toStdString();
  bool ok = true;
  if (kind == 0) {
    std::vector<long long> v;
    ok = decodeIntList(s, &v, &e);
  } else if (kind == 1) {
    std::vector<double> v;
    ok = decodeNumberList(s, &v, &e);
  } else {
    std::vector<std::pair<double, double>> v;
    ok = decodePairList(s, &v, &e);
  }
  QVERIFY(!ok);
  QVERIFY2(QString::fromStdString(e.message).contains(message), e.message.c_str());
  QCOMPARE(static_cast<int>(e.offset), offset);
}
