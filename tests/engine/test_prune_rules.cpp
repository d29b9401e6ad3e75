// TAO's pruning rules (engine/prune/prune_rules.h) on hand-built cases whose answers are
// worked out here: normalisation, the threshold (strictly above), the minimum, the
// granularity, the cap, the order of what is kept, and each equalisation criterion.
#include <QtTest>
#include <cmath>
#include <stdexcept>
#include <vector>

#include "engine/prune/prune_rules.h"

using mrcnn::prune::Equalization;
using mrcnn::prune::Normalizer;
using mrcnn::prune::PruneOptions;
using Kept = std::vector<int64_t>;

class TestPruneRules : public QObject {
  Q_OBJECT

 private slots:
  void scoresAreNormalisedByTheLargestOrByTheirL2Norm() {
    QCOMPARE(mrcnn::prune::normaliseScores({1, 2, 4}, Normalizer::kMax),
             (std::vector<double>{0.25, 0.5, 1.0}));
    const auto l2 = mrcnn::prune::normaliseScores({3, 4}, Normalizer::kL2);
    QCOMPARE(l2.size(), size_t{2});
    QVERIFY(std::abs(l2[0] - 0.6) < 1e-12 && std::abs(l2[1] - 0.8) < 1e-12);
    QCOMPARE(mrcnn::prune::normaliseScores({0, 0}, Normalizer::kMax), (std::vector<double>{0, 0}));
  }

  void filtersAboveTheThresholdAreKeptInTheirOrder() {
    PruneOptions o;
    o.granularity = 1;
    o.min_filters = 1;
    const std::vector<double> scores{0.05, 0.3, 0.1, 0.7, 0.2};
    o.threshold = 0.1;  // 0.1 itself is not above it
    QCOMPARE(mrcnn::prune::keptFilters(scores, o), (Kept{1, 3, 4}));
    o.threshold = 0.25;
    QCOMPARE(mrcnn::prune::keptFilters(scores, o), (Kept{1, 3}));
    o.threshold = 0.9;  // none above: the minimum, the best one
    QCOMPARE(mrcnn::prune::keptFilters(scores, o), (Kept{3}));
  }

  void theCountIsRoundedUpToTheGranularityWithTheBestOfTheRest() {
    // 40 filters: the 20 odd ones score 0.5 and more, the even ones 0.05 alike. 20 rounded up
    // to 24 keeps 4 even ones too: among equals the earlier, 0, 2, 4, 6.
    std::vector<double> scores(40);
    for (size_t i = 0; i < scores.size(); ++i)
      scores[i] = i % 2 ? 0.5 + static_cast<double>(i) / 100 : 0.05;
    PruneOptions o;  // threshold 0.1, granularity 8, at least 16
    Kept expected{0, 2, 4, 6};
    for (int64_t i = 1; i < 40; i += 2)
      expected.push_back(i);
    std::sort(expected.begin(), expected.end());
    QCOMPARE(mrcnn::prune::keptFilters(scores, o), expected);
  }

  void theMinimumAndTheCapHold() {
    PruneOptions o;  // at least 16, granularity 8
    // 40 filters, 3 above the threshold: 16 kept, the 3 and the 13 best of the rest.
    std::vector<double> scores(40);
    for (size_t i = 0; i < scores.size(); ++i)
      scores[i] = 0.001 * static_cast<double>(i);  // 0 .. 0.039
    scores[5] = 0.9;
    scores[17] = 0.8;
    scores[30] = 0.7;
    Kept expected{5, 17, 30};
    for (int64_t i = 39; static_cast<int64_t>(expected.size()) < 16; --i)
      if (i != 30) expected.push_back(i);
    std::sort(expected.begin(), expected.end());
    QCOMPARE(mrcnn::prune::keptFilters(scores, o), expected);
    // A layer of 10 filters, 2 above: min(16, 10) = 10, all of them (16 capped at 10).
    const std::vector<double> small{0.9, 0.8, 0, 0, 0, 0, 0, 0, 0, 0};
    QCOMPARE(mrcnn::prune::keptFilters(small, o), (Kept{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}));
    // 30 of 32 above, granularity 8: 32.
    std::vector<double> most(32, 0.5);
    most[3] = most[9] = 0;
    QCOMPARE(mrcnn::prune::keptFilters(most, o).size(), size_t{32});
  }

  void eachEqualisationCriterionCombinesTheGroup() {
    const std::vector<std::vector<double>> group{{0.2, 0.8}, {0.4, 0.2}};
    const auto near = [](const std::vector<double>& a, const std::vector<double>& b) {
      if (a.size() != b.size()) return false;
      for (size_t i = 0; i < a.size(); ++i)
        if (std::abs(a[i] - b[i]) > 1e-12) return false;
      return true;
    };
    QVERIFY(near(mrcnn::prune::equaliseScores(group, Equalization::kUnion), {0.4, 0.8}));
    QVERIFY(near(mrcnn::prune::equaliseScores(group, Equalization::kIntersection), {0.2, 0.2}));
    QVERIFY(near(mrcnn::prune::equaliseScores(group, Equalization::kArithmeticMean), {0.3, 0.5}));
    QVERIFY(near(mrcnn::prune::equaliseScores(group, Equalization::kGeometricMean),
                 {std::sqrt(0.08), 0.4}));
    QVERIFY(
        near(mrcnn::prune::equaliseScores({{0.0, 0.5}, {0.3, 0.5}}, Equalization::kGeometricMean),
             {0.0, 0.5}));
    // What each keeps at threshold 0.35 (granularity and minimum 1).
    PruneOptions o;
    o.threshold = 0.35;
    o.granularity = 1;
    o.min_filters = 1;
    const auto kept = [&](Equalization e) {
      return mrcnn::prune::keptFilters(mrcnn::prune::equaliseScores(group, e), o);
    };
    QCOMPARE(kept(Equalization::kUnion), (Kept{0, 1}));
    QCOMPARE(kept(Equalization::kIntersection), (Kept{0}));  // none above; equal: the earlier
    QCOMPARE(kept(Equalization::kArithmeticMean), (Kept{1}));
    QCOMPARE(kept(Equalization::kGeometricMean), (Kept{1}));
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, mrcnn::prune::equaliseScores(
                                                        {{0.1}, {0.1, 0.2}}, Equalization::kUnion));
  }

  void namesParse() {
    QCOMPARE(*mrcnn::prune::parseNormalizer("L2"), Normalizer::kL2);
    QCOMPARE(*mrcnn::prune::parseNormalizer("max"), Normalizer::kMax);
    QVERIFY(!mrcnn::prune::parseNormalizer("l1"));
    QCOMPARE(*mrcnn::prune::parseEqualization("geometric_mean"), Equalization::kGeometricMean);
    QVERIFY(!mrcnn::prune::parseEqualization("mean"));
    QCOMPARE(mrcnn::prune::equalizationName(Equalization::kArithmeticMean),
             std::string_view("arithmetic_mean"));
  }
};

QTEST_GUILESS_MAIN(TestPruneRules)
#include "test_prune_rules.moc"
