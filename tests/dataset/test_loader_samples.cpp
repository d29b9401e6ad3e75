// The loader's stream (same seed, same batches, whatever the thread count; epochs differ; a
// resumed run continues exactly; evaluation order; early stop; shards), the samples' boxes,
// flips and masks consistent with each other, crowd skipping, the instance cap, contiguous
// labels, padding, bad images skipped and counted. The fixture: loader_test.h.
#include "tests/dataset/loader_test.h"

void TestLoader::sameSeedSameStreamAcrossRunsAndThreads_data() {
  QTest::addColumn<QString>("dataset");
  QTest::addColumn<int>("mode");
  QTest::newRow("tinycoco shorter_side") << "tinycoco" << int(ResizeMode::kShorterSide);
  QTest::newRow("tinycoco fixed") << "tinycoco" << int(ResizeMode::kFixed);
  QTest::newRow("shapes shorter_side") << "shapes" << int(ResizeMode::kShorterSide);
}

void TestLoader::sameSeedSameStreamAcrossRunsAndThreads() {
  QFETCH(QString, dataset);
  QFETCH(int, mode);
  const auto source = dataset == "tinycoco" ? train_source_ : shapes_source_;
  LoaderOptions o = smallOptions();
  o.resize_mode = ResizeMode(mode);
  o.image_height = 320;
  o.image_width = 448;
  // Across two epochs and a half.
  const size_t count = source->size() / o.batch_size * 5 / 2;
  o.n_workers = 2;
  Loader a(source, o);
  Loader b(source, o);
  o.n_workers = 1;
  Loader c(source, o);
  o.n_workers = 0;
  Loader d(source, o);
  const std::vector<Batch> ba = take(a, count), bb = take(b, count), bc = take(c, count),
                           bd = take(d, count);
  QCOMPARE(ba.size(), count);
  QCOMPARE(bb.size(), count);
  QCOMPARE(bc.size(), count);
  QCOMPARE(bd.size(), count);
  int flipped = 0;
  for (size_t i = 0; i < count; ++i) {
    QVERIFY2(
        difference(ba[i], bb[i]).isEmpty(),
        qPrintable(QString("batch %1, 2 vs 2 workers: %2").arg(i).arg(difference(ba[i], bb[i]))));
    QVERIFY2(
        difference(ba[i], bc[i]).isEmpty(),
        qPrintable(QString("batch %1, 2 vs 1 workers: %2").arg(i).arg(difference(ba[i], bc[i]))));
    QVERIFY2(
        difference(ba[i], bd[i]).isEmpty(),
        qPrintable(QString("batch %1, 2 vs 0 workers: %2").arg(i).arg(difference(ba[i], bd[i]))));
    for (const ImageMeta& m : ba[i].meta)
      flipped += m.flipped;
  }
  QVERIFY(flipped > 0 && flipped < int(count * o.batch_size));
  QCOMPARE(ba.back().epoch, uint64_t(2));
}

void TestLoader::epochsAndSeedsChangeTheOrder() {
  LoaderOptions o = smallOptions();
  o.load_masks = false;
  const size_t per_epoch = train_source_->size() / o.batch_size;  // 32 / 4: nothing dropped
  Loader loader(train_source_, o);
  const std::vector<Batch> batches = take(loader, 2 * per_epoch);
  std::vector<int64_t> ids = imageIds(batches);
  const std::vector<int64_t> first(ids.begin(), ids.begin() + ptrdiff_t(ids.size() / 2));
  const std::vector<int64_t> second(ids.begin() + ptrdiff_t(ids.size() / 2), ids.end());
  QVERIFY(first != second);
  for (auto epoch : {first, second}) {  // each epoch visits every image once
    std::sort(epoch.begin(), epoch.end());
    std::vector<int64_t> all;
    for (const CocoImage& image : train_->images())
      all.push_back(image.id);
    std::sort(all.begin(), all.end());
    QCOMPARE(epoch, all);
  }
  QCOMPARE(batches[per_epoch - 1].epoch, uint64_t(0));
  QCOMPARE(batches[per_epoch - 1].position, uint64_t(32));
  QCOMPARE(batches[per_epoch].epoch, uint64_t(1));
  o.seed = 2027;
  Loader other(train_source_, o);
  QVERIFY(imageIds(take(other, per_epoch)) != first);
}

void TestLoader::resumeContinuesTheStream() {
  // A run stopped after 5 batches (with a skipped image on the way) and resumed from its
  // (epoch, position) sees exactly the batches the uninterrupted run saw, across an epoch
  // boundary; reset() to the same place does the same.
  const fs::path folder = fs::path(temp_.path().toStdString()) / "resume";
  fs::create_directories(folder);
  for (const CocoImage& image : train_->images())
    fs::copy_file(tinycoco_ / "images" / "train2017" / std::string(image.file_name),
                  folder / std::string(image.file_name), fs::copy_options::overwrite_existing);
  fs::remove(folder / std::string(train_->images()[5].file_name));
  auto source = std::make_shared<CocoFolderSource>(train_, folder);
  LoaderOptions o = smallOptions();
  o.batch_size = 3;  // 31 readable images: a short last batch, dropped
  Loader full(source, o);
  const std::vector<Batch> all = take(full, 16);
  QCOMPARE(all.size(), size_t(16));
  QCOMPARE(all[9].epoch, uint64_t(0));
  QCOMPARE(all[10].epoch, uint64_t(1));  // 31 / 3 = 10 full batches in epoch 0
  for (const size_t stop : {size_t(5), size_t(10), size_t(12)}) {
    Loader run(source, o);
    const std::vector<Batch> before = take(run, stop);
    const uint64_t epoch = run.epoch(), position = run.position();
    QCOMPARE(epoch, before.back().epoch);
    QCOMPARE(position, before.back().position);
    Loader resumed(source, o, epoch, position);
    const std::vector<Batch> after = take(resumed, 16 - stop);
    for (size_t i = 0; i < after.size(); ++i)
      QVERIFY2(difference(after[i], all[stop + i]).isEmpty(),
               qPrintable(QString("stop %1, batch %2: %3")
                              .arg(stop)
                              .arg(i)
                              .arg(difference(after[i], all[stop + i]))));
    run.reset(epoch, position);
    const std::optional<Batch> again = run.next();
    QVERIFY(again && difference(*again, all[stop]).isEmpty());
  }
}

void TestLoader::boxesScaleAndFlipWithTheImage() {
  auto source = std::make_shared<MemorySource>();
  source->items.push_back(
      syntheticItem(1, 100, 200, {{10, 20, 30, 40}, {150, 0, 50, 100}, {0, 90, 3, 10}}));
  LoaderOptions o;
  o.batch_size = 1;
  o.resize_mode = ResizeMode::kFixed;
  o.image_height = 150;  // scale 1.5: 150 x 300
  o.image_width = 320;
  o.max_level = 5;
  o.n_workers = 1;
  o.drop_last = false;
  // The flip of image 0 in each epoch is known in advance.
  uint64_t plain_epoch = 0, flip_epoch = 0;
  while (flipDecision(o.seed, plain_epoch, 0))
    ++plain_epoch;
  while (!flipDecision(o.seed, flip_epoch, 0))
    ++flip_epoch;
  Loader plain_loader(source, o, plain_epoch);
  Loader flip_loader(source, o, flip_epoch);
  const Batch plain = *plain_loader.next();
  const Batch flipped = *flip_loader.next();
  QVERIFY(!plain.meta[0].flipped && flipped.meta[0].flipped);
  QCOMPARE(plain.meta[0].height, 150);
  QCOMPARE(plain.meta[0].width, 300);
  QCOMPARE(plain.height, 160);  // padded to 2^5
  QCOMPARE(plain.width, 320);
  const Targets& p = plain.targets[0];
  const Targets& f = flipped.targets[0];
  QCOMPARE(p.size(), size_t(3));
  const std::vector<float> expected{15, 30, 60, 90, 225, 0, 300, 150, 0, 135, 4.5f, 150};
  QCOMPARE(p.boxes, expected);
  const std::vector<int64_t> labels{1, 2, 3};
  QCOMPARE(p.labels, labels);
  for (size_t i = 0; i < 3; ++i) {
    QCOMPARE(f.boxes[4 * i + 0], 300 - p.boxes[4 * i + 2]);
    QCOMPARE(f.boxes[4 * i + 1], p.boxes[4 * i + 1]);
    QCOMPARE(f.boxes[4 * i + 2], 300 - p.boxes[4 * i + 0]);
    QCOMPARE(f.boxes[4 * i + 3], p.boxes[4 * i + 3]);
  }
  // Masks, and the image, mirror exactly; a rectangle scaled by 1.5 covers its scaled box.
  const int h = 150, w = 300;
  const std::vector<uint8_t> p_masks = wholeMasks(p, h, w), f_masks = wholeMasks(f, h, w);
  for (size_t i = 0; i < 3; ++i) {
    const uint8_t* pm = p_masks.data() + i * size_t(h * w);
    const uint8_t* fm = f_masks.data() + i * size_t(h * w);
    for (int y = 0; y < h; ++y)
      for (int x = 0; x < w; ++x)
        QCOMPARE(fm[y * w + x], pm[y * w + (w - 1 - x)]);
    const auto e = maskExtent(pm, h, w);
    for (int k = 0; k < 4; ++k)
      QVERIFY(std::abs(e[size_t(k)] - p.boxes[4 * i + size_t(k)]) <= 1.0f);
  }
  for (size_t c = 0; c < 3; ++c)
    for (int y = 0; y < 160; ++y)
      for (int x = 0; x < 320; ++x) {
        const float pv = plain.images[(c * 160 + size_t(y)) * 320 + size_t(x)];
        const float fv =
            flipped.images[(c * 160 + size_t(y)) * 320 + size_t(x < w ? w - 1 - x : x)];
        if (x < w && y < h) {
          QCOMPARE(fv, pv);
        } else {
          QCOMPARE(pv, 0.0f);
        }
      }
  // A 3-pixel-wide box survives (4.5 px); one under 1 px after resizing is dropped. A source
  // of its own: the loaders above still prefetch from `source` in their workers.
  auto tiny = std::make_shared<MemorySource>(*source);
  tiny->items[0] = syntheticItem(1, 100, 200, {{10, 20, 30, 40}, {50, 50, 0, 10}});
  tiny->items[0].annotations[1].bbox = {50, 50, 0.5, 10};  // 0.75 px once resized
  Loader small(tiny, o, plain_epoch);
  QCOMPARE(small.next()->targets[0].size(), size_t(1));
}

void TestLoader::flippedRealSamplesMirror() {
  // Same seed with and without flips: the same order; each flipped image, its boxes and its
  // masks are the mirror of the unflipped ones.
  LoaderOptions o = smallOptions();
  o.skip_crowd_during_training = false;
  Loader flips(train_source_, o);
  o.augment_input_data = false;
  Loader plain(train_source_, o);
  const auto a = take(flips, 8), b = take(plain, 8);
  int mirrored = 0;
  for (size_t k = 0; k < a.size(); ++k)
    for (size_t i = 0; i < a[k].size(); ++i) {
      const ImageMeta& m = a[k].meta[i];
      QCOMPARE(m.image_id, b[k].meta[i].image_id);
      QVERIFY(!b[k].meta[i].flipped);
      const Targets& ft = a[k].targets[i];
      const Targets& pt = b[k].targets[i];
      QCOMPARE(ft.annotation_ids, pt.annotation_ids);
      if (!m.flipped) {
        QCOMPARE(ft.boxes, pt.boxes);
        QCOMPARE(ft.masks, pt.masks);
        QCOMPARE(ft.mask_windows, pt.mask_windows);
        continue;
      }
      ++mirrored;
      const auto w = float(m.width);
      const size_t plane = size_t(m.height) * size_t(m.width);
      const std::vector<uint8_t> f_masks = wholeMasks(ft, m.height, m.width);
      const std::vector<uint8_t> p_masks = wholeMasks(pt, m.height, m.width);
      for (size_t n = 0; n < ft.size(); ++n) {
        QCOMPARE(ft.boxes[4 * n], w - pt.boxes[4 * n + 2]);
        QCOMPARE(ft.boxes[4 * n + 2], w - pt.boxes[4 * n]);
        QCOMPARE(ft.boxes[4 * n + 1], pt.boxes[4 * n + 1]);
        for (int y = 0; y < m.height; y += 7)
          for (int x = 0; x < m.width; ++x)
            QCOMPARE(f_masks[n * plane + size_t(y * m.width + x)],
                     p_masks[n * plane + size_t(y * m.width + m.width - 1 - x)]);
      }
      const auto bh = size_t(a[k].height), bw = size_t(a[k].width);
      for (size_t c = 0; c < 3; ++c)
        for (size_t y = 0; y < size_t(m.height); y += 5)
          for (size_t x = 0; x < size_t(m.width); ++x)
            QCOMPARE(a[k].images[((i * 3 + c) * bh + y) * bw + x],
                     b[k].images[((i * 3 + c) * bh + y) * bw + size_t(m.width) - 1 - x]);
    }
  QVERIFY(mirrored > 0);
}

void TestLoader::masksAlignWithBoxes() {
  // The shapes' boxes are the extents of their masks (pycocotools' toBbox): resized, the mask's
  // extent stays within a pixel of the resized box, flipped or not, in both modes.
  for (const ResizeMode mode : {ResizeMode::kShorterSide, ResizeMode::kFixed}) {
    LoaderOptions o = smallOptions();
    o.resize_mode = mode;
    o.image_height = 200;
    o.image_width = 256;
    o.skip_crowd_during_training = false;
    Loader loader(shapes_source_, o);
    int checked = 0, flipped = 0;
    for (const Batch& batch : take(loader, shapes_source_->size() / o.batch_size)) {
      for (size_t i = 0; i < batch.size(); ++i) {
        const ImageMeta& m = batch.meta[i];
        flipped += m.flipped;
        const Targets& t = batch.targets[i];
        const size_t plane = size_t(m.height) * size_t(m.width);
        const std::vector<uint8_t> masks = wholeMasks(t, m.height, m.width);
        QCOMPARE(t.mask_windows.size(), 4 * t.size());
        for (size_t n = 0; n < t.size(); ++n) {
          const auto e = maskExtent(masks.data() + n * plane, m.height, m.width);
          // The crop is exactly the mask's extent.
          const int32_t* win = t.mask_windows.data() + 4 * n;
          if (e[0] >= 0)
            QVERIFY(win[0] == e[0] && win[1] == e[1] && win[0] + win[2] == e[2] && win[1] + win[3] == e[3]);
          if (e[0] < 0) continue;  // too thin to survive the threshold
          for (size_t k = 0; k < 4; ++k)
            QVERIFY2(std::abs(float(e[k]) - t.boxes[4 * n + k]) <= 1.0f,
                     qPrintable(QString("image %1 annotation %2: mask edge %3 vs box %4")
                                    .arg(m.image_id)
                                    .arg(t.annotation_ids[n])
                                    .arg(e[k])
                                    .arg(t.boxes[4 * n + k])));
          ++checked;
        }
      }
    }
    QVERIFY(checked > 20 && flipped > 0);
  }
}

void TestLoader::crowdSkippedOnlyWhenAsked() {
  std::set<int64_t> crowd_ids;
  for (const CocoAnnotation& a : train_->annotations())
    if (a.iscrowd) crowd_ids.insert(a.id);
  QVERIFY(!crowd_ids.empty());
  auto crowdSeen = [&](LoaderOptions o) {
    o.load_masks = false;
    o.max_num_instances = 0;
    Loader loader(train_source_, o);
    std::set<int64_t> seen;
    for (const Batch& b : take(loader, train_source_->size() / o.batch_size))
      for (const Targets& t : b.targets)
        for (size_t n = 0; n < t.size(); ++n)
          if (t.iscrowd[n]) seen.insert(t.annotation_ids[n]);
    return seen;
  };
  LoaderOptions o = smallOptions();
  QVERIFY(crowdSeen(o).empty());
  o.skip_crowd_during_training = false;
  QCOMPARE(crowdSeen(o), crowd_ids);
  o.skip_crowd_during_training = true;
  o.training = false;  // evaluation keeps them
  o.eval_samples = 0;
  QCOMPARE(crowdSeen(o), crowd_ids);
}

void TestLoader::maxNumInstancesKeepsTheFirst() {
  LoaderOptions o = smallOptions();
  o.load_masks = false;
  o.max_num_instances = 0;
  Loader all(train_source_, o);
  o.max_num_instances = 3;
  Loader capped(train_source_, o);
  const auto a = take(all, 8), c = take(capped, 8);
  int cut = 0;
  for (size_t k = 0; k < a.size(); ++k)
    for (size_t i = 0; i < a[k].size(); ++i) {
      const auto& ids = a[k].targets[i].annotation_ids;
      const std::vector<int64_t> first(ids.begin(),
                                       ids.begin() + ptrdiff_t(std::min<size_t>(3, ids.size())));
      QCOMPARE(c[k].targets[i].annotation_ids, first);
      cut += ids.size() > 3;
      // File order: the ids come in the json's order for their image.
      const auto image_index = *train_->imageIndex(a[k].meta[i].image_id);
      std::vector<int64_t> file_order;
      for (const uint32_t n : train_->annotationsOfImage(image_index))
        file_order.push_back(train_->annotations()[n].id);
      size_t at = 0;
      for (const int64_t id : ids) {
        while (at < file_order.size() && file_order[at] != id)
          ++at;
        QVERIFY2(at < file_order.size(), "annotation out of file order");
      }
    }
  QVERIFY(cut > 0);
}

void TestLoader::labelsAreContiguous() {
  LoaderOptions o = smallOptions();
  o.load_masks = false;
  o.training = false;
  o.eval_samples = 0;
  Loader loader(train_source_, o);
  std::map<int64_t, int64_t> category_of;
  for (const CocoAnnotation& a : train_->annotations())
    category_of[a.id] = a.category_id;
  const std::vector<int64_t> ids = train_source_->categoryIds();
  QCOMPARE(ids.size(), size_t(80));
  QVERIFY(std::is_sorted(ids.begin(), ids.end()));
  QVERIFY(ids.back() > 80);  // COCO's ids have gaps: 1..90
  size_t instances = 0;
  for (const Batch& b : takeAll(loader))
    for (const Targets& t : b.targets)
      for (size_t n = 0; n < t.size(); ++n, ++instances) {
        QVERIFY(t.labels[n] >= 1 && t.labels[n] <= 80);
        QCOMPARE(ids[size_t(t.labels[n] - 1)], category_of.at(t.annotation_ids[n]));
      }
  QVERIFY(instances > 200);
}

void TestLoader::paddingToTheMultiple() {
  for (const uint32_t divisibility : {32u, 64u, 1u}) {
    LoaderOptions o = smallOptions();
    o.size_divisibility = divisibility;
    o.load_masks = false;
    Loader loader(train_source_, o);
    for (const Batch& b : take(loader, 8)) {
      int max_h = 0, max_w = 0;
      for (const ImageMeta& m : b.meta) {
        max_h = std::max(max_h, m.height);
        max_w = std::max(max_w, m.width);
      }
      QCOMPARE(b.height, roundUp(max_h, int(divisibility)));
      QCOMPARE(b.width, roundUp(max_w, int(divisibility)));
      QCOMPARE(b.images.size(), b.size() * 3 * size_t(b.height) * size_t(b.width));
    }
  }
  // fixed: the canvas rounded up to 2^max_level, whatever the images.
  LoaderOptions o = smallOptions();
  o.resize_mode = ResizeMode::kFixed;
  o.image_height = 400;
  o.image_width = 600;
  o.max_level = 6;
  o.load_masks = false;
  Loader loader(train_source_, o);
  const Batch b = *loader.next();
  QCOMPARE(b.height, 448);
  QCOMPARE(b.width, 640);
  for (const ImageMeta& m : b.meta)
    QVERIFY(m.height == 400 || m.width == 600);
}

void TestLoader::badImagesSkippedAndCounted() {
  // A copy of tinycoco val with image 1 missing, image 3 truncated (half its bytes) and
  // image 4 replaced by text: the loader delivers the three good ones, in order, and says why
  // it skipped each of the others.
  const fs::path folder = fs::path(temp_.path().toStdString()) / "bad";
  fs::create_directories(folder);
  const auto images = val_->images();
  QCOMPARE(images.size(), size_t(6));
  for (size_t i = 0; i < images.size(); ++i) {
    const fs::path from = tinycoco_ / "images" / "val2017" / std::string(images[i].file_name);
    const fs::path to = folder / std::string(images[i].file_name);
    if (i == 1) continue;
    if (i == 3) {
      const std::vector<uint8_t> bytes = readRaw<uint8_t>(from);
      writeRaw(to,
               std::vector<uint8_t>(bytes.begin(), bytes.begin() + ptrdiff_t(bytes.size() / 2)));
    } else if (i == 4) {
      std::ofstream(to) << "not an image";
    } else {
      fs::copy_file(from, to, fs::copy_options::overwrite_existing);
    }
  }
  auto source = std::make_shared<CocoFolderSource>(val_, folder);
  for (const uint32_t workers : {2u, 0u}) {
    LoaderOptions o = smallOptions();
    o.training = false;
    o.eval_samples = 0;
    o.batch_size = 2;
    o.n_workers = workers;
    o.load_masks = false;
    Loader loader(source, o);
    const std::vector<Batch> batches = takeAll(loader);
    const std::vector<int64_t> expected{images[0].id, images[2].id, images[5].id};
    QCOMPARE(imageIds(batches), expected);
    QCOMPARE(batches.size(), size_t(2));
    const LoaderStats stats = loader.stats();
    QCOMPARE(stats.skipped_images, uint64_t(3));
    QCOMPARE(stats.images, uint64_t(3));
    const std::vector<LoaderWarning> warnings = loader.warnings();
    QCOMPARE(warnings.size(), size_t(3));
    QCOMPARE(warnings[0].code, LoaderWarningCode::kMissingImage);
    QCOMPARE(warnings[0].image_id, images[1].id);
    QCOMPARE(warnings[1].code, LoaderWarningCode::kCorruptImage);
    QCOMPARE(warnings[1].image_id, images[3].id);
    QVERIFY(warnings[1].message.find("truncated") != std::string::npos);
    QCOMPARE(warnings[2].code, LoaderWarningCode::kCorruptImage);
    QCOMPARE(warnings[2].image_id, images[4].id);
    QVERIFY(warnings[0].message.find(std::string(images[1].file_name)) != std::string::npos);
    // Each warning came with the batch that was filled past its image.
    QCOMPARE(batches[0].warnings.size(), size_t(1));
    QCOMPARE(batches[1].warnings.size(), size_t(2));
    QCOMPARE(loader.takeWarnings().size(), size_t(3));
    QVERIFY(loader.takeWarnings().empty());
  }
}

void TestLoader::everyImageBadEndsWithAnError() {
  // No image file at all: training (which repeats epochs) and evaluation both end with a
  // LoaderError naming the problem, instead of looping or crashing.
  const fs::path empty = fs::path(temp_.path().toStdString()) / "empty";
  fs::create_directories(empty);
  auto source = std::make_shared<CocoFolderSource>(train_, empty);
  for (const bool training : {true, false}) {
    for (const uint32_t workers : {2u, 0u}) {
      LoaderOptions o = smallOptions();
      o.training = training;
      o.n_workers = workers;
      Loader loader(source, o);
      QString message;
      try {
        loader.next();
      } catch (const LoaderError& e) {
        message = e.what();
      }
      QVERIFY2(message.contains("yields no batch") && message.contains("32 of 32") &&
                   message.contains("missing_image"),
               qPrintable(message));
      QVERIFY_THROWS_EXCEPTION(LoaderError, loader.next());   // stays failed
      QCOMPARE(loader.stats().skipped_images, uint64_t(32));  // each one reported
      QCOMPARE(loader.warnings().front().code, LoaderWarningCode::kMissingImage);
    }
  }
}

void TestLoader::evalOrderIsFileOrder() {
  LoaderOptions o = smallOptions();
  o.training = false;
  o.eval_samples = 4;
  o.batch_size = 3;
  Loader loader(val_source_, o);
  const std::vector<Batch> batches = takeAll(loader);
  QCOMPARE(batches.size(), size_t(2));
  QCOMPARE(batches[1].size(), size_t(1));  // evaluation keeps the short last batch
  std::vector<int64_t> expected;
  for (size_t i = 0; i < 4; ++i)
    expected.push_back(val_->images()[i].id);
  QCOMPARE(imageIds(batches), expected);
  for (const Batch& b : batches)
    for (const ImageMeta& m : b.meta)
      QVERIFY(!m.flipped);
  QVERIFY(!loader.next());  // stays ended
  loader.reset(0);
  QCOMPARE(imageIds(takeAll(loader)), expected);
  o.eval_samples = 0;
  Loader everything(val_source_, o);
  QCOMPARE(imageIds(takeAll(everything)).size(), size_t(6));
}

void TestLoader::earlyStopAndWaitTime() {
  // The consumer takes one batch and drops the loader while workers are busy and the queue
  // is full: the destructor joins promptly.
  const auto t0 = std::chrono::steady_clock::now();
  {
    LoaderOptions o = smallOptions();
    o.prefetch_buffer_size = 1;
    Loader loader(train_source_, o);
    QVERIFY(loader.next());
    const LoaderStats stats = loader.stats();
    QCOMPARE(stats.batches, uint64_t(1));
    QCOMPARE(stats.images, uint64_t(4));
    QVERIFY(stats.wait_seconds > 0 && stats.wait_seconds == stats.last_wait_seconds);
  }
  {
    LoaderOptions o = smallOptions();
    Loader never_read(train_source_, o);
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  QVERIFY2(seconds < 20, qPrintable(QString::number(seconds)));
}

void TestLoader::shardsGiveTheSameSamples() {
  // tinycoco val through dataset_convert into 4 shards: the shard source gives the json's
  // order, and the same images and targets as the json + folder source, except annotations
  // dataset_convert leaves out (TAO's box rule).
  const fs::path out = fs::path(temp_.path().toStdString()) / "shards";
  ConvertOptions convert;
  convert.image_dir = tinycoco_ / "images" / "val2017";
  convert.annotations = tinycoco_ / "annotations" / "instances_val2017.json";
  convert.output_dir = out;
  convert.tag = "val";
  convert.num_shards = 4;
  convert.threads = 2;
  const ConvertResult converted = convertDataset(convert);
  QCOMPARE(converted.images_written, uint64_t(6));
  const std::vector<fs::path> files = shardFilesMatching((out / "val-*-of-*").string());
  QCOMPARE(files.size(), size_t(4));
  auto shards = std::make_shared<ShardSource>(files);
  QCOMPARE(shards->size(), size_t(6));
  QCOMPARE(shards->categoryIds(), val_source_->categoryIds());

  LoaderOptions o = smallOptions();
  o.training = false;
  o.eval_samples = 0;
  o.batch_size = 2;
  Loader from_json(val_source_, o);
  Loader from_shards(shards, o);
  const auto a = takeAll(from_json), b = takeAll(from_shards);
  QCOMPARE(imageIds(b), imageIds(a));
  size_t compared = 0, left_out = 0;
  for (size_t k = 0; k < a.size(); ++k) {
    QVERIFY(a[k].images == b[k].images);
    for (size_t i = 0; i < a[k].size(); ++i) {
      const Targets& x = a[k].targets[i];
      const Targets& y = b[k].targets[i];
      const size_t plane = size_t(a[k].meta[i].height) * size_t(a[k].meta[i].width);
      const std::vector<uint8_t> x_masks = wholeMasks(x, a[k].meta[i].height, a[k].meta[i].width);
      const std::vector<uint8_t> y_masks = wholeMasks(y, a[k].meta[i].height, a[k].meta[i].width);
      size_t n = 0;
      for (size_t m = 0; m < x.size(); ++m) {
        if (n == y.size() || y.annotation_ids[n] != x.annotation_ids[m]) {
          ++left_out;
          continue;
        }
        QVERIFY(std::equal(x.boxes.begin() + ptrdiff_t(4 * m),
                           x.boxes.begin() + ptrdiff_t(4 * m + 4),
                           y.boxes.begin() + ptrdiff_t(4 * n)));
        QCOMPARE(y.labels[n], x.labels[m]);
        QCOMPARE(y.iscrowd[n], x.iscrowd[m]);
        QVERIFY(std::equal(x_masks.begin() + ptrdiff_t(m * plane),
                           x_masks.begin() + ptrdiff_t((m + 1) * plane),
                           y_masks.begin() + ptrdiff_t(n * plane)));
        ++n;
        ++compared;
      }
      QCOMPARE(n, y.size());
    }
  }
  QVERIFY(compared > 50);
  QVERIFY(left_out <= converted.annotations_skipped);

  // Training on shards: the same stream with 2 workers as without.
  o = smallOptions();
  o.batch_size = 2;
  Loader two(shards, o);
  o.n_workers = 0;
  Loader none(shards, o);
  const auto t2 = take(two, 6), t0 = take(none, 6);
  for (size_t k = 0; k < t2.size(); ++k)
    QVERIFY(difference(t2[k], t0[k]).isEmpty());

  // A damaged record fails its checksum: skipped with a warning, not a crash.
  const fs::path damaged = out / "damaged";
  fs::create_directories(damaged);
  for (const fs::path& f : files)
    fs::copy_file(f, damaged / f.filename());
  std::vector<uint8_t> bytes = readRaw<uint8_t>(damaged / files[0].filename());
  bytes[bytes.size() / 2] ^= 0x5A;
  writeRaw(damaged / files[0].filename(), bytes);
  o = smallOptions();
  o.training = false;
  o.eval_samples = 0;
  o.batch_size = 2;
  Loader partly(std::make_shared<ShardSource>(shardFilesMatching((damaged / "val-*").string())), o);
  QCOMPARE(imageIds(takeAll(partly)).size(), size_t(5));
  QCOMPARE(partly.stats().skipped_images, uint64_t(1));
  QCOMPARE(partly.warnings().at(0).code, LoaderWarningCode::kUnreadableImage);
  // Shards without masks cannot feed a loader that wants masks.
  convert.include_mask = false;
  convert.tag = "nomask";
  convertDataset(convert);
  auto no_masks = std::make_shared<ShardSource>(shardFilesMatching((out / "nomask-*").string()));
  QVERIFY(!no_masks->hasMasks());
  QVERIFY_THROWS_EXCEPTION(LoaderError, Loader(no_masks, o));
  o.load_masks = false;
  Loader boxes_only(no_masks, o);
  QCOMPARE(imageIds(takeAll(boxes_only)), imageIds(a));
}
