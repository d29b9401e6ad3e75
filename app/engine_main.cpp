// mrcnn-engine: runs one task from a spec. Started by mrcnn-workbench (GUI or --headless).
#include <iostream>
#include <string>
#include <vector>

#include "engine/cli.h"

int main(int argc, char** argv) {
  const std::vector<std::string> args(argv + 1, argv + argc);
  return mrcnn::engine::engineMain(args, std::cout, std::cerr);
}
