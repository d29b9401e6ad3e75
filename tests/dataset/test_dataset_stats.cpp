// The dataset check on small annotation files whose answers are worked out here: counts per
// class, sizes and crowds; planted problems (categories that differ between train and val,
// ids from 0 and with gaps, a num_classes that does not fit, an unused category, an
// annotation of an unknown category, a rare class); the anchor coverage of boxes the anchors
// fit and of a 4:1 box they do not, with the aspect pair that would cover it.
#include <QTemporaryDir>
#include <QtTest>
#include <fstream>

#include "dataset/coco/coco.h"
#include "dataset/stats/dataset_stats.h"

using namespace mrcnn::dataset;

namespace {

CocoDataset load(const QTemporaryDir& dir, const char* name, const std::string& json) {
  const std::string path = dir.filePath(name).toStdString();
  std::ofstream(path) << json;
  return loadCoco(path);
}

std::string annotation(int id, int image, int category, double x, double y, double w, double h,
                       bool crowd = false) {
  return "{\"id\": " + std::to_string(id) + ", \"image_id\": " + std::to_string(image) +
         ", \"category_id\": " + std::to_string(category) + ", \"bbox\": [" + std::to_string(x) +
         ", " + std::to_string(y) + ", " + std::to_string(w) + ", " + std::to_string(h) +
         "], \"area\": " + std::to_string(w * h) + ", \"iscrowd\": " + (crowd ? "1" : "0") +
         ", \"segmentation\": []}";
}

const Problem* find(const DatasetStats& s, const std::string& code) {
  for (const Problem& p : s.problems)
    if (p.code == code) return &p;
  return nullptr;
}

// One level of stride 8, square anchors of 32 pixels, images used at their size.
AnchorCoverageOptions squares32() {
  AnchorCoverageOptions o;
  o.min_level = o.max_level = 3;
  o.anchor_scale = 4;
  o.aspect_pairs = {{1.0, 1.0}};
  o.canvas_height = 100;
  o.canvas_width = 200;
  return o;
}

}  // namespace

class DatasetStatsTest : public QObject {
  Q_OBJECT
 private slots:
  void bestAnchorIouOfWorkedBoxes() {
    const AnchorCoverageOptions o = squares32();
    // Centred on a cell centre (20 = 8 * 2.5): the anchor itself.
    QCOMPARE(bestAnchorIou(20, 20, 32, 32, o, o.aspect_pairs), 1.0);
    // 4 px off the nearest centre (28): overlap 28 x 32 = 896 of 2048 - 896.
    QCOMPARE(bestAnchorIou(24, 20, 32, 32, o, o.aspect_pairs), 896.0 / 1152.0);
    // A 64 x 16 box: overlap 32 x 16 = 512 of 1024 + 1024 - 512.
    QCOMPARE(bestAnchorIou(20, 20, 64, 16, o, o.aspect_pairs), 512.0 / 1536.0);
    QCOMPARE(bestAnchorIou(20, 20, 64, 16, o, {{2.0, 0.5}}), 1.0);
  }

  void countsProblemsAndCoverage() {
    QTemporaryDir dir;
    // train: cat (1), dog (2), bird (4, no instance): ids with a gap; one annotation of
    // category 99, which the file does not list.
    const CocoDataset train = load(
        dir, "train.json",
        R"({"images": [{"id": 1, "width": 200, "height": 100, "file_name": "a.jpg"},
                       {"id": 2, "width": 200, "height": 100, "file_name": "b.jpg"},
                       {"id": 3, "width": 100, "height": 100, "file_name": "c.jpg"}],
            "categories": [{"id": 1, "name": "cat"}, {"id": 2, "name": "dog"},
                           {"id": 4, "name": "bird"}],
            "annotations": [)" +
            annotation(1, 1, 1, 4, 4, 32, 32) + ", " + annotation(2, 1, 1, 100, 60, 10, 10) + ", " +
            annotation(3, 1, 2, 0, 0, 200, 100) + ", " + annotation(4, 2, 1, -12, 12, 64, 16) +
            ", " + annotation(5, 2, 2, 0, 0, 50, 50, /*crowd=*/true) + ", " +
            annotation(6, 2, 99, 0, 0, 10, 10) + "]}");
    // val: the same ids, but 4 is "parrot", and 5 (fish) only here.
    const CocoDataset val = load(
        dir, "val.json",
        R"({"images": [{"id": 7, "width": 200, "height": 100, "file_name": "v.jpg"}],
                 "categories": [{"id": 1, "name": "cat"}, {"id": 2, "name": "dog"},
                                {"id": 4, "name": "parrot"}, {"id": 5, "name": "fish"}],
                 "annotations": [)" +
            annotation(1, 7, 1, 4, 4, 32, 32) + ", " + annotation(2, 7, 5, 8, 8, 32, 32) + "]}");
    const DatasetStats s =
        datasetStats({{"train", "train.json", &train}, {"val", "val.json", &val}}, squares32(),
                     /*num_classes=*/5, /*labels_are_ids=*/false);
    QCOMPARE(s.sets.size(), size_t{2});
    const SetStats& t = s.sets[0];
    QCOMPARE(t.images, 3);
    QCOMPARE(t.instances, 4);  // the crowd apart, the unknown category left out by the loader
    QCOMPARE(t.crowds, 1);
    QCOMPARE(t.images_without_instances, 1);
    QCOMPARE(t.classes.size(), size_t{3});
    QCOMPARE(t.classes[0].instances, 3);  // cat
    QCOMPARE(t.classes[0].images, 2);
    QCOMPARE(t.classes[1].instances, 1);  // dog, plus its crowd
    QCOMPARE(t.classes[1].crowds, 1);
    QCOMPARE(t.classes[2].instances, 0);  // bird
    // Areas 1024 (medium, = 32^2), 100 (small), 20000 (large), 1024 (medium).
    QCOMPARE(t.sizes[0], 1);
    QCOMPARE(t.sizes[1], 2);
    QCOMPARE(t.sizes[2], 1);
    QCOMPARE(t.imbalance, 3.0);
    QCOMPARE(t.instances_per_image.counts[0], 1);  // image 3
    QCOMPARE(t.image_sizes.front().second, 2);     // two of 200 x 100
    // Anchors (32-pixel squares every 8 pixels; images of 200 x 100 used as they are, the
    // 100 x 100 one scaled by 1): the 32 x 32 box centred at (20, 20) is covered (IoU 1),
    // the 10 x 10 and the 200 x 100 boxes are not (IoU 100/1024 and 1024/20000), the 64 x 16
    // box centred at (20, 20) is not (1/3) until a (2, 0.5) pair is added.
    const AnchorCoverage& a = t.anchors;
    QCOMPARE(a.boxes, (std::array<int64_t, 3>{1, 2, 1}));
    QCOMPARE(a.covered, (std::array<int64_t, 3>{0, 1, 0}));
    QCOMPARE(a.share_all, 0.25);
    QVERIFY(a.suggested_pair.has_value());
    QCOMPARE(a.suggested_pair->first, 2.0);
    QCOMPARE(a.suggested_pair->second, 0.5);
    QCOMPARE(a.share_with_suggestion, 0.5);

    const Problem* differ = find(s, "categories_differ");
    QVERIFY(differ);
    QVERIFY2(differ->message.find("id 4 is \"bird\" in train and \"parrot\" in val") !=
                     std::string::npos &&
                 differ->message.find("id 5 (fish) only in val") != std::string::npos,
             differ->message.c_str());
    const Problem* gaps = find(s, "id_gaps");
    QVERIFY(gaps);
    QVERIFY2(gaps->message.find("train.json: category ids 1..4 leave 1 gaps among 3 categories: "
                                "num_classes must be 4 with category_labels: contiguous, 5 with "
                                "category_id") == 0,
             gaps->message.c_str());
    const Problem* mismatch = find(s, "num_classes_mismatch");
    QVERIFY(mismatch);
    QVERIFY2(mismatch->message.find("num_classes is 5 but train.json's 3 categories need 4") !=
                 std::string::npos,
             mismatch->message.c_str());
    QVERIFY(find(s, "unused_categories"));
    QVERIFY(find(s, "unknown_category_ids"));
    QVERIFY2(find(s, "unknown_category_ids")->message.find("1 annotation(s)") != std::string::npos,
             find(s, "unknown_category_ids")->message.c_str());
    QVERIFY(find(s, "rare_classes"));
    QVERIFY(find(s, "anchor_coverage"));
    QVERIFY(!find(s, "ids_from_zero"));
    const std::string json = datasetStatsJson(s);
    QVERIFY2(json.find("\"suggested_pair\":[2") != std::string::npos, json.c_str());
    QVERIFY(datasetStatsText(s).find("[categories_differ]") != std::string::npos);
  }

  void idsFromZero() {
    QTemporaryDir dir;
    const CocoDataset zero = load(dir, "zero.json",
                                  R"({"images": [], "annotations": [],
                                      "categories": [{"id": 0, "name": "person"},
                                                     {"id": 1, "name": "car"}]})");
    const DatasetStats s = datasetStats({{"train", "zero.json", &zero}}, squares32(), 3, true);
    QVERIFY(find(s, "ids_from_zero"));
    QVERIFY2(
        find(s, "ids_from_zero")->message.find("id 0 is the background label") != std::string::npos,
        find(s, "ids_from_zero")->message.c_str());
    QVERIFY(find(s, "num_classes_mismatch"));  // category_id labels need 2 (max id + 1)
    QVERIFY(!find(s, "id_gaps"));
  }
};

QTEST_GUILESS_MAIN(DatasetStatsTest)
#include "test_dataset_stats.moc"
