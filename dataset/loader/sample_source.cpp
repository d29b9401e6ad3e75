#include "dataset/loader/sample_source.h"

#include "dataset/loader/sample_order.h"

#include <fstream>
#include <system_error>

#include "dataset/coco/coco.h"

namespace mrcnn::dataset {

Rle SampleSource::mask(const SourceAnnotation& annotation) const {
  return annotation.mask ? *annotation.mask : Rle{};
}

std::vector<uint32_t> SampleSource::labels(size_t index, bool skip_crowd) const {
  std::vector<uint32_t> out;
  for (const SourceAnnotation& a : read(index).annotations)
    if (a.label != 0 && !(skip_crowd && a.iscrowd)) out.push_back(a.label);
  return out;
}

std::vector<uint8_t> readFileBytes(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    std::error_code ec;
    const bool exists = std::filesystem::exists(path, ec);
    throw SampleError(exists ? SampleError::Kind::kUnreadable : SampleError::Kind::kMissing,
                      path.string() + (exists ? ": cannot be opened" : ": no such file"));
  }
  std::vector<uint8_t> bytes;
  in.seekg(0, std::ios::end);
  const std::streamoff size = in.tellg();
  if (size > 0) {
    bytes.resize(static_cast<size_t>(size));
    in.seekg(0);
    in.read(reinterpret_cast<char*>(bytes.data()), size);
  }
  if (!in) throw SampleError(SampleError::Kind::kUnreadable, path.string() + ": read failed");
  return bytes;
}

CocoFolderSource::CocoFolderSource(std::shared_ptr<const CocoDataset> dataset,
                                   std::filesystem::path image_dir)
    : dataset_(std::move(dataset)), image_dir_(std::move(image_dir)) {}

CocoFolderSource::CocoFolderSource(const std::filesystem::path& json_file,
                                   std::filesystem::path image_dir)
    : dataset_(std::make_shared<const CocoDataset>(loadCoco(json_file))),
      image_dir_(std::move(image_dir)) {}

size_t CocoFolderSource::size() const {
  return dataset_->images().size();
}

int64_t CocoFolderSource::imageId(size_t index) const {
  return dataset_->images()[index].id;
}

std::filesystem::path CocoFolderSource::imagePath(size_t index) const {
  return image_dir_ / std::filesystem::path(std::string(dataset_->images()[index].file_name));
}

SourceSample CocoFolderSource::read(size_t index) const {
  const CocoImage& image = dataset_->images()[index];
  SourceSample sample;
  sample.image_id = image.id;
  sample.height = image.height;
  sample.width = image.width;
  sample.origin = imagePath(index).string();
  sample.encoded = readFileBytes(sample.origin);
  const auto annotation_indices = dataset_->annotationsOfImage(static_cast<uint32_t>(index));
  sample.annotations.reserve(annotation_indices.size());
  for (const uint32_t a : annotation_indices) {
    const CocoAnnotation& annotation = dataset_->annotations()[a];
    SourceAnnotation& out = sample.annotations.emplace_back();
    out.id = annotation.id;
    out.category_id = annotation.category_id;
    out.label = annotation.label;
    out.iscrowd = annotation.iscrowd;
    out.bbox = annotation.bbox;
    out.area = annotation.area;
    out.ref = a;
  }
  return sample;
}

std::vector<uint32_t> CocoFolderSource::labels(size_t index, bool skip_crowd) const {
  std::vector<uint32_t> out;
  for (const uint32_t a : dataset_->annotationsOfImage(static_cast<uint32_t>(index))) {
    const CocoAnnotation& annotation = dataset_->annotations()[a];
    if (annotation.label != 0 && !(skip_crowd && annotation.iscrowd)) out.push_back(annotation.label);
  }
  return out;
}

Rle CocoFolderSource::mask(const SourceAnnotation& annotation) const {
  return annotationRle(*dataset_, dataset_->annotations()[annotation.ref]);
}

std::vector<int64_t> CocoFolderSource::categoryIds() const {
  std::vector<int64_t> ids;
  for (const CocoCategory& category : dataset_->categories())
    ids.push_back(category.id);
  return ids;
}

std::vector<double> repeatFactorsOf(const SampleSource& source, double threshold, bool skip_crowd) {
  std::vector<std::vector<uint32_t>> labels(source.size());
  for (size_t i = 0; i < labels.size(); ++i) {
    try {
      labels[i] = source.labels(i, skip_crowd);
    } catch (const SampleError&) {
      // Unreadable: the loader skips it with its warning; here it repeats once.
    }
  }
  return repeatFactors(labels, threshold);
}

}  // namespace mrcnn::dataset
