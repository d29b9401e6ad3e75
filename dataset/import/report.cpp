#include "dataset/import/report.h"

#include <fstream>
#include <map>
#include <sstream>

#include "io/json_writer.h"

namespace mrcnn::dataset::import {
namespace {

void writeProblems(io::JsonWriter& w, const std::vector<ImportProblem>& problems) {
  w.beginArray();
  for (const ImportProblem& p : problems) {
    w.beginObject()
        .key("code").value(p.code)
        .key("file").value(p.file)
        .key("place").value(p.place)
        .key("message").value(p.message)
        .endObject();
  }
  w.endArray();
}

// The first few problems of each code, then how many more: a data set with 10,000 clipped
// polygons must not print 10,000 lines.
void printProblems(std::ostringstream& out, const char* title, const std::vector<ImportProblem>& problems) {
  if (problems.empty()) return;
  constexpr size_t kShown = 5;
  std::map<std::string, std::vector<const ImportProblem*>> by_code;
  for (const ImportProblem& p : problems) by_code[p.code].push_back(&p);
  out << title << " (" << problems.size() << "):\n";
  for (const auto& [code, list] : by_code) {
    out << "  " << code << ": " << list.size() << "\n";
    for (size_t k = 0; k < list.size() && k < kShown; ++k) {
      const ImportProblem& p = *list[k];
      out << "    " << p.file << (p.place.empty() ? "" : ": " + p.place) << ": " << p.message << "\n";
    }
    if (list.size() > kShown) out << "    ... and " << list.size() - kShown << " more (import_report.json)\n";
  }
}

}  // namespace

void writeReportJson(const std::filesystem::path& path, const ImportSummary& summary) {
  std::ofstream out(path, std::ios::binary);
  io::JsonWriter w(out);
  w.beginObject();
  w.key("format").value(summary.format);
  w.key("format_guessed").value(summary.format_guessed);
  w.key("input").value(summary.input.string());
  w.key("categories").beginArray();
  for (const std::string& c : summary.categories) w.value(c);
  w.endArray();
  w.key("splits").beginObject();
  for (const auto& [name, counts] : summary.splits) {
    w.key(name).beginObject();
    w.key("images").value(counts.images);
    w.key("instances").value(counts.instances);
    w.key("instances_per_class").beginObject();
    for (const auto& [label, n] : counts.instances_per_class) w.key(label).value(n);
    w.endObject();
    w.endObject();
  }
  w.endObject();
  w.key("images_skipped").value(summary.images_skipped);
  w.key("instances_skipped").value(summary.instances_skipped);
  w.key("warnings");
  writeProblems(w, summary.warnings);
  w.key("skipped");
  writeProblems(w, summary.skipped);
  w.key("seconds").value(summary.seconds);
  w.endObject();
  out << "\n";
  if (!out) throw std::runtime_error(path.string() + ": write failed");
}

std::string formatSummary(const ImportSummary& summary) {
  std::ostringstream out;
  out << "format: " << summary.format << (summary.format_guessed ? " (guessed from the input)" : "") << "\n";
  out << "input: " << summary.input.string() << "\n";
  out << "output: " << summary.output_dir.string() << "\n";
  out << "categories (" << summary.categories.size() << "):";
  for (size_t k = 0; k < summary.categories.size(); ++k) out << " " << k + 1 << "=" << summary.categories[k];
  out << "\n";
  for (const auto& [name, counts] : summary.splits) {
    out << "split " << name << ": " << counts.images << " images, " << counts.instances << " instances\n";
    for (const auto& [label, n] : counts.instances_per_class) out << "  " << label << ": " << n << "\n";
  }
  out << "skipped: " << summary.images_skipped << " images, " << summary.instances_skipped << " instances\n";
  printProblems(out, "skipped", summary.skipped);
  printProblems(out, "warnings", summary.warnings);
  return out.str();
}

}  // namespace mrcnn::dataset::import
