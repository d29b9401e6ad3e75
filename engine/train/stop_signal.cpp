#include "engine/train/stop_signal.h"

#include <signal.h>
#include <unistd.h>

#include <atomic>

namespace mrcnn::train {
namespace {

std::atomic<int> g_signal{0};
static_assert(std::atomic<int>::is_always_lock_free, "the signal handler needs a lock-free flag");

struct sigaction g_previous_int {};
struct sigaction g_previous_term {};
bool g_installed = false;

void onSignal(int sig) {
  int expected = 0;
  if (!g_signal.compare_exchange_strong(expected, sig)) {
    // A second signal: the user does not want to wait for the step and the checkpoint.
    ::_exit(128 + sig);
  }
}

}  // namespace

void StopSignal::install() {
  g_signal.store(0);
  if (g_installed) return;
  struct sigaction action {};
  action.sa_handler = onSignal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;  // a read or write interrupted by the first signal goes on
  ::sigaction(SIGINT, &action, &g_previous_int);
  ::sigaction(SIGTERM, &action, &g_previous_term);
  g_installed = true;
}

void StopSignal::uninstall() {
  if (!g_installed) return;
  ::sigaction(SIGINT, &g_previous_int, nullptr);
  ::sigaction(SIGTERM, &g_previous_term, nullptr);
  g_installed = false;
}

bool StopSignal::requested() {
  return g_signal.load(std::memory_order_relaxed) != 0;
}

int StopSignal::signal() {
  return g_signal.load(std::memory_order_relaxed);
}

void StopSignal::reset() {
  g_signal.store(0);
}

}  // namespace mrcnn::train
