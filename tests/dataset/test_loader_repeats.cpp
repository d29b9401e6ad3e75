// Class-balanced repeats (LVIS's rule, data_config.repeat_threshold): the factors of a set with
// one class in 5% of its images, the sampled class frequencies against the rule's expectation
// over many epochs, each epoch's fixed length; then the loader on tinycoco's real images with
// repeat factors: every epoch visits its images as often as the order says, and a run stopped
// and resumed sees exactly the batches of an uninterrupted one. Images without objects
// (data_config.filter_empty_gt): kept, they come with no targets; left out, never.
#include <QtTest>
#include <cmath>
#include <map>

#include "dataset/loader/sample_order.h"
#include "dataset/loader/subset_source.h"
#include "tests/dataset/loader_test.h"

using namespace loader_test;

void TestLoader::repeatFactorsFollowTheRule() {
  // 1000 images: class 1 in 50 (5%), each with a class 2 too; the others hold class 2 or 3.
  std::vector<std::vector<uint32_t>> labels(1000);
  for (uint32_t i = 0; i < 1000; ++i) {
    if (i % 20 == 0) {
      labels[i] = {1, 2, 1};
    } else {
      labels[i] = {i % 2 == 0 ? 2u : 3u};
    }
  }
  labels[7].clear();  // an image without annotations repeats once
  // threshold 0.2: class 1's factor sqrt(0.2 / 0.05) = 2 exactly; classes 2 and 3 (f > 0.2) 1.
  std::vector<double> r = repeatFactors(labels, 0.2);
  for (uint32_t i = 0; i < 1000; ++i) QCOMPARE(r[i], i % 20 == 0 ? 2.0 : 1.0);
  QCOMPARE(repeatedEpochSize(r), 1050u);
  // threshold 0.3: sqrt(6) = 2.449 for class 1's images; then the fractions are drawn.
  r = repeatFactors(labels, 0.3);
  const double r1 = std::sqrt(0.3 / 0.05);
  QCOMPARE(r[0], r1);
  QCOMPARE(r[1], 1.0);
  const uint32_t epoch_size = repeatedEpochSize(r);
  QCOMPARE(epoch_size, static_cast<uint32_t>(950 + 100 + std::ceil(50 * (r1 - 2))));

  // Over 400 epochs: the epoch's length never changes, every visit is an image of the set,
  // each of class 1's images comes r1 times an epoch on average and the others once; class
  // 1's share of the visits is the rule's 50 r1 / epoch size.
  std::vector<uint64_t> visits(1000, 0);
  const int epochs = 400;
  for (int e = 0; e < epochs; ++e) {
    const std::vector<uint32_t> order = repeatedOrder(77, static_cast<uint64_t>(e), r);
    QCOMPARE(order.size(), size_t{epoch_size});
    std::vector<uint32_t> per(1000, 0);
    for (const uint32_t i : order) {
      QVERIFY(i < 1000);
      ++per[i];
    }
    for (uint32_t i = 0; i < 1000; ++i) {
      // floor(r) or ceil(r) visits, the epoch's own draw (plus, rarely, the epoch's last slot
      // when its draw came one short).
      QVERIFY2(per[i] >= static_cast<uint32_t>(std::floor(r[i])) &&
                   per[i] <= static_cast<uint32_t>(std::ceil(r[i])) + 1,
               qPrintable(QString("image %1: %2 visits, factor %3").arg(i).arg(per[i]).arg(r[i])));
      visits[i] += per[i];
    }
  }
  double class1 = 0, others = 0, class1_visits = 0;
  for (uint32_t i = 0; i < 1000; ++i) {
    const double mean = static_cast<double>(visits[i]) / epochs;
    if (i % 20 == 0) {
      class1 += mean / 50;
      class1_visits += static_cast<double>(visits[i]);
    } else {
      others = std::max(others, std::abs(mean - 1));
    }
  }
  qInfo("class 1: %.4f visits an image an epoch (rule %.4f)", class1, r1);
  QVERIFY2(std::abs(class1 - r1) < 0.01, qPrintable(QString::number(class1)));
  QVERIFY2(others < 0.01, qPrintable(QString::number(others)));  // 1 + less than 1/1000
  const double share = class1_visits / (static_cast<double>(epochs) * epoch_size);
  QVERIFY2(std::abs(share - 50 * r1 / epoch_size) < 0.001, qPrintable(QString::number(share)));
  // A function of (seed, epoch).
  QCOMPARE(repeatedOrder(77, 3, r), repeatedOrder(77, 3, r));
  QVERIFY(repeatedOrder(77, 3, r) != repeatedOrder(77, 4, r));
  QVERIFY(repeatedOrder(77, 3, r) != repeatedOrder(78, 3, r));
}

void TestLoader::repeatsResumeExactly() {
  auto source = std::make_shared<CocoFolderSource>(train_, tinycoco_ / "images" / "train2017");
  LoaderOptions o = smallOptions();
  o.batch_size = 3;
  // tinycoco's 32 training images, 80 categories: those in fewer than 3 images repeat.
  o.repeat_factors = repeatFactorsOf(*source, 0.1, o.skip_crowd_during_training);
  const uint32_t epoch_size = repeatedEpochSize(o.repeat_factors);
  int repeated = 0;
  for (const double f : o.repeat_factors) repeated += f > 1 ? 1 : 0;
  qInfo("%d of 32 images repeat; an epoch is %u images", repeated, epoch_size);
  QVERIFY(repeated > 3 && epoch_size > 40);

  Loader full(source, o);
  const size_t per_epoch = epoch_size / 3;
  const std::vector<Batch> all = take(full, per_epoch + 4);
  QCOMPARE(all.size(), per_epoch + 4);
  QCOMPARE(all[per_epoch - 1].epoch, uint64_t{0});
  QCOMPARE(all[per_epoch].epoch, uint64_t{1});
  // Epoch 0 visits its images as its order says (the short tail dropped).
  const std::vector<uint32_t> order = repeatedOrder(o.seed, 0, o.repeat_factors);
  std::map<uint32_t, int> expected, seen;
  for (size_t i = 0; i < per_epoch * 3; ++i) ++expected[order[i]];
  for (size_t b = 0; b < per_epoch; ++b)
    for (const auto& m : all[b].meta) ++seen[static_cast<uint32_t>(m.source_index)];
  QCOMPARE(seen, expected);

  for (const size_t stop : {size_t{2}, per_epoch - 1, per_epoch + 1}) {
    Loader run(source, o);
    const std::vector<Batch> before = take(run, stop);
    Loader resumed(source, o, run.epoch(), run.position());
    const std::vector<Batch> after = take(resumed, all.size() - stop);
    for (size_t i = 0; i < after.size(); ++i)
      QVERIFY2(difference(after[i], all[stop + i]).isEmpty(),
               qPrintable(QString("stop %1, batch %2: %3").arg(stop).arg(i).arg(difference(after[i], all[stop + i]))));
  }
}

// Ten images, three without objects and one holding only a crowd: kept (filter_empty_gt
// false), every image comes once an epoch and the empty ones with no targets; left out, the
// epoch is the six others and each comes with its objects.
void TestLoader::emptyImagesAreNegativesOrLeftOut() {
  auto source = std::make_shared<MemorySource>();
  for (int64_t i = 0; i < 10; ++i) {
    const bool empty = i % 3 == 0;  // images 0, 3, 6, 9
    source->items.push_back(syntheticItem(i + 1, 96, 128,
                                          empty ? std::vector<std::array<int, 4>>{}
                                                : std::vector<std::array<int, 4>>{{10, 12, 30, 20}}));
  }
  // Image 10 holds only a crowd: training skips crowds, so it holds nothing to train on.
  source->items[9] = syntheticItem(10, 96, 128, {{40, 40, 20, 20}});
  source->items[9].annotations[0].iscrowd = true;
  LoaderOptions o = smallOptions();
  o.training = true;
  o.repeat = false;
  o.drop_last = false;
  o.batch_size = 2;

  const std::vector<uint32_t> kept = samplesWithAnnotations(*source, o.skip_crowd_during_training);
  QCOMPARE(kept, (std::vector<uint32_t>{1, 2, 4, 5, 7, 8}));
  QCOMPARE(samplesWithAnnotations(*source, false).size(), size_t{7});  // the crowd counts there

  std::map<int64_t, size_t> instances;  // by image id, over one epoch
  Loader all(source, o);
  for (const Batch& b : takeAll(all))
    for (size_t i = 0; i < b.size(); ++i) {
      QVERIFY(!instances.count(b.meta[i].image_id));
      instances[b.meta[i].image_id] = b.targets[i].size();
    }
  QCOMPARE(instances, (std::map<int64_t, size_t>{{1, 0}, {2, 1}, {3, 1}, {4, 0}, {5, 1}, {6, 1},
                                                 {7, 0}, {8, 1}, {9, 1}, {10, 0}}));

  instances.clear();
  Loader filtered(std::make_shared<SubsetSource>(source, kept), o);
  for (const Batch& b : takeAll(filtered))
    for (size_t i = 0; i < b.size(); ++i) instances[b.meta[i].image_id] = b.targets[i].size();
  QCOMPARE(instances, (std::map<int64_t, size_t>{{2, 1}, {3, 1}, {5, 1}, {6, 1}, {8, 1}, {9, 1}}));
}
