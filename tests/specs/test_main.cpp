// Runs every spec test class in one executable.
#include <QtTest>

#include "tests/specs/test_classes.h"

int main(int argc, char** argv) {
  int status = 0;
  {
    SpecTest t;
    status |= QTest::qExec(&t, argc, argv);
  }
  {
    LiteralTest t;
    status |= QTest::qExec(&t, argc, argv);
  }
  return status;
}
