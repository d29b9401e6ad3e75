// mrcnn-workbench: the desktop workbench, or with --headless the same engine from a terminal.
#include <cstring>
#include <iostream>
#include <string>
#include <vector>

#include "app/headless.h"

int main(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--headless") == 0) {
      std::vector<std::string> rest;
      for (int k = 1; k < argc; ++k) {
        if (k != i) rest.emplace_back(argv[k]);
      }
      return mrcnn::app::runHeadless(rest, argv[0]);
    }
  }
  std::cerr << "mrcnn-workbench: the desktop window is not part of this build yet; run a task "
               "with\n  mrcnn-workbench --headless SPEC [--task TASK]\n";
  return 2;
}
