// mrcnn-data: the tasks on annotation files alone (engine/file_tasks.h) without LibTorch:
// dataset_import, and dataset_stats, evaluate and label_check on files. Started by
// mrcnn-workbench --headless for those tasks, or by hand.
#include <csignal>
#include <iostream>
#include <string>
#include <vector>

#include "engine/file_cli.h"

int main(int argc, char** argv) {
  // A file size limit (ulimit -f) fails the write (EFBIG), reported like a full disk.
  std::signal(SIGXFSZ, SIG_IGN);
  const std::vector<std::string> args(argv + 1, argv + argc);
  return mrcnn::engine::dataMain(args, std::cout, std::cerr);
}
