// The step profile's count of the operators that do the work (about one kernel launch each on
// a GPU), by the stage scope around them (engine/runtime/op_profile.h), on the CPU.
#include <ATen/ATen.h>
#include <ATen/record_function.h>

#include <QtTest>
#include <string>
#include <vector>

#include "engine/runtime/op_profile.h"

using mrcnn::engine::OpProfile;

class TestOpProfile : public QObject {
  Q_OBJECT

 private slots:
  void countsTheWorkByStage() {
    const at::Tensor a = at::ones({4});
    const at::Tensor b = at::full({4}, 2.0);
    OpProfile profile(true);
    QVERIFY(profile.active());
    {
      RECORD_USER_SCOPE("mrcnn/first");
      const at::Tensor c = a + b;                // 1: add
      (void)c.view({2, 2}).t().unsqueeze(0);     // none: views
      (void)at::zeros({3});                      // 1: its fill, not zeros or the allocation
      std::vector<at::Tensor> list = {a.clone(), b.clone()};  // 2: the copies
      at::_foreach_add_(list, 1.0);              // 1: a multi-tensor operation, as a whole
      {
        RECORD_USER_SCOPE("mrcnn/first/inner");  // the innermost scope takes its operators
        (void)(a * 2);                           // 1
      }
    }
    (void)(a - b);  // 1, outside every scope
    const std::string text = profile.stop();
    QVERIFY(!profile.active());
    const auto& counts = profile.counts();
    QVERIFY2(text.find("by stage") != std::string::npos, text.c_str());
    QCOMPARE(counts.by_stage.size(), size_t{3});
    QCOMPARE(counts.by_stage.at("first"), 5);
    QCOMPARE(counts.by_stage.at("first/inner"), 1);
    QCOMPARE(counts.by_stage.at("(no stage)"), 1);
    QCOMPARE(counts.work, 7);
    QCOMPARE(counts.launches, 0);  // no GPU here
  }

  void offProfilesNothing() {
    OpProfile profile(false);
    QVERIFY(!profile.active());
    (void)(at::ones({2}) + 1);
    QVERIFY(profile.stop().empty());
    QCOMPARE(profile.counts().work, 0);
  }
};

QTEST_GUILESS_MAIN(TestOpProfile)
#include "test_op_profile.moc"
