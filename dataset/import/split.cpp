#include "dataset/import/split.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <numeric>

#include "dataset/import/file_util.h"
#include "dataset/import/import.h"

namespace mrcnn::dataset::import {
namespace {

// splitmix64: the same sequence on every standard library (std::shuffle and the
// distributions are not specified to the bit).
uint64_t splitmix(uint64_t& state) {
  uint64_t z = (state += 0x9E3779B97F4A7C15ULL);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

}  // namespace

std::optional<std::string> parseSplit(const std::string& text,
                                      std::vector<std::pair<std::string, double>>* out) {
  std::vector<std::pair<std::string, double>> parts;
  size_t start = 0;
  double total = 0;
  while (start <= text.size()) {
    const size_t end = std::min(text.find(',', start), text.size());
    const std::string part = text.substr(start, end - start);
    start = end + 1;
    const size_t eq = part.find('=');
    if (eq == std::string::npos) return "\"" + part + "\" is not name=fraction (e.g. train=0.8,val=0.2)";
    const std::string name = part.substr(0, eq);
    if (name.empty() || !std::all_of(name.begin(), name.end(), [](unsigned char c) {
          return std::isalnum(c) || c == '_' || c == '-';
        })) {
      return "split name \"" + name + "\": use letters, digits, '_' and '-'";
    }
    const std::optional<double> fraction = parseDouble(part.substr(eq + 1));
    if (!fraction || !std::isfinite(*fraction) || *fraction <= 0) {
      return "split " + name + ": \"" + part.substr(eq + 1) + "\" is not a positive number";
    }
    if (std::any_of(parts.begin(), parts.end(), [&](const auto& p) { return p.first == name; })) {
      return "split " + name + " is given twice";
    }
    parts.emplace_back(name, *fraction);
    total += *fraction;
  }
  if (std::abs(total - 1.0) > 1e-6) {
    return "the fractions add up to " + std::to_string(total) + ", not 1";
  }
  *out = std::move(parts);
  return std::nullopt;
}

void assignSplits(const std::vector<std::pair<std::string, double>>& fractions, uint64_t seed,
                  const std::vector<std::string>& keys, std::vector<std::string>* split) {
  std::vector<size_t> open;
  for (size_t i = 0; i < split->size(); ++i) {
    if ((*split)[i].empty()) open.push_back(i);
  }
  if (open.empty() || fractions.empty()) return;
  std::sort(open.begin(), open.end(), [&](size_t a, size_t b) { return keys[a] < keys[b]; });
  uint64_t state = seed;
  for (size_t i = open.size(); i > 1; --i) {
    // The modulo's bias is below 2^-40 for any realistic image count.
    std::swap(open[i - 1], open[splitmix(state) % i]);
  }
  // Largest remainder: floor shares first, the images left over to the largest fractions.
  const size_t n = open.size();
  std::vector<size_t> count(fractions.size());
  std::vector<std::pair<double, size_t>> remainder;
  size_t given = 0;
  for (size_t k = 0; k < fractions.size(); ++k) {
    const double exact = fractions[k].second * static_cast<double>(n);
    count[k] = static_cast<size_t>(std::floor(exact));
    given += count[k];
    remainder.emplace_back(exact - std::floor(exact), k);
  }
  std::stable_sort(remainder.begin(), remainder.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  for (size_t r = 0; given < n; ++r, ++given) ++count[remainder[r % remainder.size()].second];
  size_t at = 0;
  for (size_t k = 0; k < fractions.size(); ++k) {
    for (size_t c = 0; c < count[k]; ++c) (*split)[open[at++]] = fractions[k].first;
  }
}

}  // namespace mrcnn::dataset::import
