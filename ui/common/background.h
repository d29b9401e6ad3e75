// Work off the UI thread with the result delivered back on it: `work` runs in `pool`, then
// `done(result)` runs in `receiver`'s thread. The receiver must outlive the pool's tasks:
// views own their pool and wait for it in their destructor (waitForBackground), so a
// result never reaches a deleted widget.
#pragma once

#include <QMetaObject>
#include <QObject>
#include <QThreadPool>
#include <memory>
#include <utility>

namespace mrcnn::ui {

template <class Work, class Done>
void runInBackground(QThreadPool& pool, QObject* receiver, Work work, Done done) {
  // std::function (QThreadPool::start) wants copyable callables: share the move-only parts.
  auto shared_work = std::make_shared<Work>(std::move(work));
  auto shared_done = std::make_shared<Done>(std::move(done));
  pool.start([receiver, shared_work, shared_done] {
    auto result = std::make_shared<decltype((*shared_work)())>((*shared_work)());
    QMetaObject::invokeMethod(
        receiver, [shared_done, result] { (*shared_done)(std::move(*result)); },
        Qt::QueuedConnection);
  });
}

// For destructors: drop queued tasks and wait for the running ones.
inline void waitForBackground(QThreadPool& pool) {
  pool.clear();
  pool.waitForDone();
}

}  // namespace mrcnn::ui
