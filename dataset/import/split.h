// Assigning images to splits: the fractions of --split, a seed, and the images a format put
// in a split of its own left where they are.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace mrcnn::dataset::import {

// For each image with an empty split[i], a split drawn from `fractions`: the images are
// ordered by `keys` (so that the result does not depend on the order files were found in),
// shuffled by a portable generator seeded with `seed`, and cut by the largest-remainder
// method, so a split of 0.8/0.2 over 10 images is 8 and 2 exactly.
void assignSplits(const std::vector<std::pair<std::string, double>>& fractions, uint64_t seed,
                  const std::vector<std::string>& keys, std::vector<std::string>* split);

}  // namespace mrcnn::dataset::import
