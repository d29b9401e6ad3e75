// The import's report: import_report.json, and the summary printed for a person.
#pragma once

#include <filesystem>

#include "dataset/import/import.h"

namespace mrcnn::dataset::import {

// {"format", "format_guessed", "input", "categories", "splits": {name: {images, instances,
// instances_per_class}}, "images_skipped", "instances_skipped", "warnings": [{code, file,
// place, message}], "skipped": [...], "seconds"}
void writeReportJson(const std::filesystem::path& path, const ImportSummary& summary);

}  // namespace mrcnn::dataset::import
