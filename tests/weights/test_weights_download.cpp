// Weights by name (weights/): the built-in catalogue against torchvision's own weights enums and
// COCO categories (catalogue_oracle.py), and the download against a real HTTP server on
// 127.0.0.1 (weights_server.py, Python's http.server) reached through MRCNN_WEIGHTS_MIRROR: a
// good file (downloaded once, progress reported, found again without a request), a wrong
// hash, a 404, a truncated transfer, a server that stalls and one that never answers, a
// refused connection (offline), a cancelled download, two resolves at once — each failure one
// clear error naming the URL and where to put the file by hand, and nothing left in the cache
// but the good file.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <QCryptographicHash>
#include <QDir>
#include <QElapsedTimer>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QRandomGenerator>
#include <QTemporaryDir>
#include <QtTest>
#include <thread>

#include "specs/spec.h"
#include "tests/common/reference_script.h"
#include "weights/catalogue.h"
#include "weights/coco_categories.h"
#include "weights/download.h"
#include "weights/resolve.h"

namespace w = mrcnn::weights;
namespace fs = std::filesystem;

namespace {

QByteArray randomBytes(int size, quint32 seed) {
  QRandomGenerator gen(seed);
  QByteArray bytes(size, Qt::Uninitialized);
  for (char& c : bytes)
    c = static_cast<char>(gen.bounded(256));
  return bytes;
}

QString sha256Prefix(const QByteArray& bytes) {
  return QString::fromLatin1(
      QCryptographicHash::hash(bytes, QCryptographicHash::Sha256).toHex().left(8));
}

// The error a call throws, as text (empty when it throws nothing), and its failure kind.
template <typename F>
QString errorOf(F&& f, w::DownloadFailure* failure = nullptr) {
  try {
    f();
  } catch (const w::DownloadError& e) {
    if (failure) *failure = e.failure();
    return QString::fromStdString(e.what());
  } catch (const std::exception& e) {
    return QString::fromStdString(e.what());
  }
  return {};
}

// One entry of a test catalogue (moc cannot read raw string literals, hence no JSON literal).
QString catalogueEntry(const QString& name, const QString& url, const QString& prefix) {
  return QString(
             "{\"name\": \"torchvision:%1\", \"url\": \"%2\", \"sha256_prefix\": \"%3\", "
             "\"kind\": \"imagenet_resnet\", \"depth\": 50}")
      .arg(name, url, prefix);
}

// A local port nothing listens on: that of a socket bound and closed again.
int closedPort() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t size = sizeof address;
  ::bind(fd, reinterpret_cast<sockaddr*>(&address), size);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &size);
  ::close(fd);
  return ntohs(address.sin_port);
}

QStringList filesIn(const QString& dir) {
  return QDir(dir).entryList(QDir::Files | QDir::Hidden | QDir::NoDotAndDotDot, QDir::Name);
}

}  // namespace

class TestWeightsDownload : public QObject {
  Q_OBJECT

  QTemporaryDir dir_;
  QProcess server_;
  QString serverError_;
  QString mirror_;
  QByteArray good_, other_;
  QString goodFile_;  // good-<prefix>.pth
  w::Catalogue catalogue_;

  QString cacheDir() const { return dir_.filePath("cache"); }
  QString requestLog() const { return dir_.filePath("requests.log"); }
  int requests(const QString& path) const {
    QFile log(requestLog());
    if (!log.open(QIODevice::ReadOnly)) return 0;
    return QString::fromUtf8(log.readAll()).split('\n').count(path);
  }
  bool serverReady() {
    if (!serverError_.isEmpty()) QTest::qFail(qPrintable(serverError_), __FILE__, __LINE__);
    return serverError_.isEmpty();
  }
  w::ResolveOptions options(const QString& cache = {}) const {
    w::ResolveOptions o;
    o.catalogue = &catalogue_;
    o.cache_dir = (cache.isEmpty() ? cacheDir() : cache).toStdString();
    o.mirror = mirror_.toStdString();
    o.download.stall_seconds = 2;  // the stalling server's case ends in seconds, not a minute
    return o;
  }
  // Only the good file may ever be in the shared cache: no partial file, no file of a failed
  // download.
  void verifyCacheHoldsAtMostTheGoodFile() {
    for (const QString& f : filesIn(cacheDir()))
      QCOMPARE(f, goodFile_);
  }
  // A failed resolve of `name`: its message names the URL (through the mirror), the cache
  // path to put the file at by hand and `reason`; its kind is `expected`; the cache keeps no
  // trace of it.
  void verifyFailure(const char* name, const QString& url_path, const QString& reason,
                     w::DownloadFailure expected) {
    w::DownloadFailure failure{};
    const QString error = errorOf([&] { w::resolveWeights(name, "/spec", options()); }, &failure);
    qInfo("%s", qPrintable(error));
    QVERIFY2(error.contains(mirror_ + url_path), qPrintable(error));
    QVERIFY2(error.contains(reason), qPrintable(error));
    QVERIFY2(error.contains("put it at " + cacheDir() + "/"), qPrintable(error));
    QVERIFY2(error.startsWith(QString(name) + ": cannot download it"), qPrintable(error));
    QCOMPARE(static_cast<int>(failure), static_cast<int>(expected));
    verifyCacheHoldsAtMostTheGoodFile();
  }

 private slots:
  void initTestCase() {
    QVERIFY(dir_.isValid());
    // A proxy from the environment must not stand between the test and its server.
    qputenv("no_proxy", "127.0.0.1,localhost");
    qputenv("NO_PROXY", "127.0.0.1,localhost");
    QVERIFY(QDir().mkpath(dir_.filePath("served")));
    good_ = randomBytes(300000, 1);
    other_ = randomBytes(5000, 2);
    const QString good_prefix = sha256Prefix(good_);
    goodFile_ = "good-" + good_prefix + ".pth";
    // The served files: each catalogue entry's file name with content of the right or the
    // wrong hash.
    const QString wrong_prefix = sha256Prefix(randomBytes(100, 3));  // not other_'s hash
    const QMap<QString, QByteArray> served = {
        {goodFile_, good_},
        {"wrong-" + wrong_prefix + ".pth", other_},
        {"trunc-" + sha256Prefix(good_) + ".pth", good_},
    };
    for (auto it = served.begin(); it != served.end(); ++it) {
      QFile f(dir_.filePath("served/" + it.key()));
      QVERIFY(f.open(QIODevice::WriteOnly));
      f.write(it.value());
    }
    // Published URLs on another host: the mirror makes them the local server's.
    const QString host = "https://download.pytorch.org";
    const QStringList entries = {
        catalogueEntry("good", host + "/models/" + goodFile_, good_prefix),
        catalogueEntry("wrong_hash", host + "/models/wrong-" + wrong_prefix + ".pth", wrong_prefix),
        catalogueEntry("missing", host + "/models/missing-" + good_prefix + ".pth", good_prefix),
        catalogueEntry("truncated", host + "/truncated/trunc-" + good_prefix + ".pth", good_prefix),
        catalogueEntry("stalled", host + "/stall/trunc-" + good_prefix + ".pth", good_prefix),
        catalogueEntry("silent", host + "/silent/trunc-" + good_prefix + ".pth", good_prefix),
    };
    const QString json = "{\"entries\": [" + entries.join(", ") + "]}";
    catalogue_ = w::parseCatalogue(json.toStdString(), "test catalogue");

    const QString python = qEnvironmentVariable("MRCNN_PYTHON");
    if (python.isEmpty()) {
      serverError_ = "MRCNN_PYTHON is not set: no HTTP server to download from";
      return;
    }
    server_.setProcessChannelMode(QProcess::ForwardedErrorChannel);
    server_.start(python,
                  {qEnvironmentVariable("MRCNN_SOURCE_DIR") + "/tests/weights/weights_server.py",
                   dir_.filePath("served"), requestLog()});
    if (!server_.waitForReadyRead(30000)) {
      serverError_ = "weights_server.py did not start: " + server_.errorString();
      return;
    }
    const QString line = QString::fromUtf8(server_.readLine()).trimmed();
    if (!line.startsWith("port ")) {
      serverError_ = "weights_server.py said \"" + line + "\", not its port";
      return;
    }
    mirror_ = "http://127.0.0.1:" + line.mid(5);
  }

  void cleanupTestCase() {
    server_.kill();
    server_.waitForFinished(5000);
  }

  // ---- The download cases ----

  void goodFileIsDownloadedOnceWithProgress() {
    if (!serverReady()) return;
    std::vector<w::DownloadProgress> reports;
    w::ResolveOptions o = options();
    o.download.progress = [&](const w::DownloadProgress& p) { reports.push_back(p); };
    o.download.progress_interval_s = 0;  // every report libcurl gives
    const fs::path file = w::resolveWeights("torchvision:good", "/spec", o);
    QCOMPARE(QString::fromStdString(file.string()), cacheDir() + "/" + goodFile_);
    QFile f(QString::fromStdString(file.string()));
    QVERIFY(f.open(QIODevice::ReadOnly));
    QVERIFY(f.readAll() == good_);
    QCOMPARE(requests("/models/" + goodFile_), 1);

    // Progress: bytes never go back, the last report is done with the whole size, a rate.
    QVERIFY(!reports.empty());
    for (size_t i = 1; i < reports.size(); ++i)
      QVERIFY(reports[i].bytes >= reports[i - 1].bytes);
    const w::DownloadProgress& last = reports.back();
    QVERIFY(last.done);
    QCOMPARE(last.bytes, static_cast<uint64_t>(good_.size()));
    QCOMPARE(last.total, static_cast<uint64_t>(good_.size()));
    QVERIFY(last.bytes_per_second > 0);
    QCOMPARE(last.eta_seconds, 0.0);
    for (const auto& p : reports) {
      if (!p.done && p.total != 0) QCOMPARE(p.total, static_cast<uint64_t>(good_.size()));
    }

    // Found again: verified, not downloaded again, no progress.
    reports.clear();
    QCOMPARE(w::resolveWeights("torchvision:good", "/other", o), file);
    QCOMPARE(requests("/models/" + goodFile_), 1);
    QVERIFY(reports.empty());
    QCOMPARE(filesIn(cacheDir()), QStringList{goodFile_});
  }

  void wrongHashIsRefusedAndNotKept() {
    if (!serverReady()) return;
    verifyFailure("torchvision:wrong_hash", "/models/wrong-",
                  "the file's sha256 is " +
                      QString::fromLatin1(
                          QCryptographicHash::hash(other_, QCryptographicHash::Sha256).toHex()),
                  w::DownloadFailure::kHashMismatch);
  }

  void notFoundNamesTheStatus() {
    if (!serverReady()) return;
    verifyFailure("torchvision:missing", "/models/missing-", "the server answered HTTP 404",
                  w::DownloadFailure::kHttpStatus);
  }

  void truncatedTransferIsRefused() {
    if (!serverReady()) return;
    verifyFailure("torchvision:truncated", "/truncated/trunc-",
                  QString("the connection ended after %1 of %2 bytes")
                      .arg(good_.size() / 2)
                      .arg(good_.size()),
                  w::DownloadFailure::kTruncated);
  }

  void stalledServerFailsInBoundedTime() {
    if (!serverReady()) return;
    QElapsedTimer timer;
    timer.start();
    verifyFailure("torchvision:stalled", "/stall/trunc-",
                  "the transfer stalled: under 1024 bytes/s for 2 s", w::DownloadFailure::kStalled);
    QVERIFY2(timer.elapsed() < 20000, qPrintable(QString::number(timer.elapsed()) + " ms"));
  }

  void silentServerFailsInBoundedTime() {
    if (!serverReady()) return;
    QElapsedTimer timer;
    timer.start();
    verifyFailure("torchvision:silent", "/silent/trunc-", "the transfer stalled",
                  w::DownloadFailure::kStalled);
    QVERIFY2(timer.elapsed() < 20000, qPrintable(QString::number(timer.elapsed()) + " ms"));
  }

  void offlineNamesTheUrlAndWhereToPutTheFile() {
    // Nothing listens on the port of a socket just closed: the connection is refused, as on
    // a machine without a network.
    const QString closed = "http://127.0.0.1:" + QString::number(closedPort());
    w::ResolveOptions o = options();
    o.mirror = closed.toStdString();
    w::DownloadFailure failure{};
    if (serverError_.isEmpty()) {
      // The good file, downloaded before, needs no connection.
      const QString cached = errorOf([&] { w::resolveWeights("torchvision:good", "/spec", o); });
      QVERIFY2(cached.isEmpty(), qPrintable(cached));
    }
    o.cache_dir = dir_.filePath("offline-cache").toStdString();
    const QString offline =
        errorOf([&] { w::resolveWeights("torchvision:good", "/spec", o); }, &failure);
    qInfo("%s", qPrintable(offline));
    QCOMPARE(static_cast<int>(failure), static_cast<int>(w::DownloadFailure::kConnection));
    QVERIFY2(offline.contains(closed + "/models/" + goodFile_), qPrintable(offline));
    QVERIFY2(offline.contains("put it at " + dir_.filePath("offline-cache/" + goodFile_)),
             qPrintable(offline));
    QVERIFY2(offline.contains("MRCNN_WEIGHTS_MIRROR"), qPrintable(offline));
    QCOMPARE(filesIn(dir_.filePath("offline-cache")), QStringList{});
  }

  void cancelledDownloadLeavesNothing() {
    if (!serverReady()) return;
    w::ResolveOptions o = options();
    o.download.stall_seconds = 60;  // the cancellation, not the stall, must end it
    QElapsedTimer timer;
    timer.start();
    o.download.cancelled = [&] { return timer.elapsed() > 500; };
    w::DownloadFailure failure{};
    const QString error =
        errorOf([&] { w::resolveWeights("torchvision:stalled", "/spec", o); }, &failure);
    QCOMPARE(static_cast<int>(failure), static_cast<int>(w::DownloadFailure::kCancelled));
    QVERIFY2(error.contains("cancelled"), qPrintable(error));
    QVERIFY2(!error.contains("put it at"), qPrintable(error));
    QVERIFY2(timer.elapsed() < 10000, qPrintable(QString::number(timer.elapsed()) + " ms"));
    verifyCacheHoldsAtMostTheGoodFile();
  }

  void progressCallbackErrorEndsTheDownload() {
    if (!serverReady()) return;
    // The engine's callback writes events, which can fail (a full disk): its exception comes
    // out of resolveWeights as it was, and the download leaves nothing.
    const QString cache = dir_.filePath("callback-cache");
    w::ResolveOptions o = options(cache);
    o.download.progress = [](const w::DownloadProgress&) {
      throw std::runtime_error("events: disk full");
    };
    QCOMPARE(errorOf([&] { w::resolveWeights("torchvision:good", "/spec", o); }),
             QString("events: disk full"));
    QCOMPARE(filesIn(cache), QStringList{});
  }

  void concurrentResolvesDownloadOnce() {
    if (!serverReady()) return;
    // Two ranks of a data-parallel run resolving the same name at once: one download.
    const QString cache = dir_.filePath("shared-cache");
    const int before = requests("/models/" + goodFile_);
    QString errors[2];
    fs::path files[2];
    auto resolve = [&](int i) {
      try {
        files[i] = w::resolveWeights("torchvision:good", "/spec", options(cache));
      } catch (const std::exception& e) {
        errors[i] = e.what();
      }
    };
    std::thread a(resolve, 0), b(resolve, 1);
    a.join();
    b.join();
    QCOMPARE(errors[0], QString());
    QCOMPARE(errors[1], QString());
    QCOMPARE(files[0], files[1]);
    QCOMPARE(requests("/models/" + goodFile_) - before, 1);
    QCOMPARE(filesIn(cache), QStringList{goodFile_});
  }

  void fileOfAnotherHashInTheCacheIsRefused() {
    // A file put in the cache by hand that is not the published one is never loaded.
    const QString cache = dir_.filePath("hand-cache");
    QVERIFY(QDir().mkpath(cache));
    QFile f(cache + "/" + goodFile_);
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write(other_);
    f.close();
    const QString error =
        errorOf([&] { w::resolveWeights("torchvision:good", "/spec", options(cache)); });
    QVERIFY2(error.contains(cache + "/" + goodFile_ + " has sha256 "), qPrintable(error));
    QVERIFY2(error.contains("not one beginning " + sha256Prefix(good_)), qPrintable(error));
    QVERIFY2(error.contains("delete it to download it again"), qPrintable(error));
  }

  void partialFileOfAKilledDownloadIsRemoved() {
    if (!serverReady()) return;
    const QString cache = dir_.filePath("stale-cache");
    QVERIFY(QDir().mkpath(cache));
    QFile partial(cache + "/" + goodFile_ + ".partial");
    QVERIFY(partial.open(QIODevice::WriteOnly));
    partial.write(good_.left(100));
    partial.close();
    w::resolveWeights("torchvision:good", "/spec", options(cache));
    QCOMPARE(filesIn(cache), QStringList{goodFile_});
  }

  void cacheHoldsOnlyTheGoodFile() {
    if (!serverReady()) return;
    QCOMPARE(filesIn(cacheDir()), QStringList{goodFile_});
  }

  // ---- Names, paths, the cache folder, the mirror ----

  void pathsResolveAsBefore() {
    QCOMPARE(w::resolveWeights("", "/spec/dir", options()), fs::path());
    QCOMPARE(w::resolveWeights("runs/a/model.pt", "/spec/dir", options()),
             fs::path("/spec/dir/runs/a/model.pt"));
    QCOMPARE(w::resolveWeights("/abs/model.pt", "/spec/dir", options()), fs::path("/abs/model.pt"));
    // A colon alone does not make a name: only a catalogue namespace does.
    QCOMPARE(w::resolveWeights("a:b.pt", "/spec", options()), fs::path("/spec/a:b.pt"));
    QVERIFY(w::isCatalogueName("torchvision:resnet50"));
    QVERIFY(!w::isCatalogueName("torchvision_resnet50.pth"));
  }

  void unknownAndUnsupportedNamesSayWhy() {
    const QString unknown = errorOf([] { w::resolveWeights("torchvision:resnet51", "/spec"); });
    QVERIFY2(
        unknown.startsWith(
            "checkpoint \"torchvision:resnet51\": no such weights in the catalogue; known names: "),
        qPrintable(unknown));
    QVERIFY2(unknown.contains("torchvision:resnet50, "), qPrintable(unknown));
    QVERIFY2(unknown.contains("torchvision:maskrcnn_resnet50_fpn"), qPrintable(unknown));
    const QString v2 =
        errorOf([] { w::resolveWeights("torchvision:maskrcnn_resnet50_fpn_v2", "/spec"); });
    QVERIFY2(v2.contains("cannot be used: torchvision's v2 Mask R-CNN puts batch norms in the FPN"),
             qPrintable(v2));
  }

  void catalogueFromTheEnvironment() {
    if (!serverReady()) return;
    // A site's (or an end-to-end test's) own catalogue: names resolve through it alone.
    const QString path = dir_.filePath("site-catalogue.json");
    QFile f(path);
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write(("{\"entries\": [" +
             catalogueEntry("site_model", "https://example.org/models/" + goodFile_,
                            sha256Prefix(good_)) +
             "]}")
                .toUtf8());
    f.close();
    qputenv("MRCNN_WEIGHTS_CATALOGUE", path.toUtf8());
    QCOMPARE(w::activeCatalogue().size(), size_t{1});
    w::ResolveOptions o = options(dir_.filePath("site-cache"));
    o.catalogue = nullptr;
    QCOMPARE(w::resolveWeights("torchvision:site_model", "/spec", o),
             fs::path(dir_.filePath("site-cache/" + goodFile_).toStdString()));
    const QString unknown = errorOf([&] { w::resolveWeights("torchvision:resnet50", "/spec", o); });
    QVERIFY2(unknown.contains("known names: torchvision:site_model"), qPrintable(unknown));
    qputenv("MRCNN_WEIGHTS_CATALOGUE", dir_.filePath("nowhere.json").toUtf8());
    const QString missing = errorOf([] { w::activeCatalogue(); });
    QVERIFY2(missing.contains("nowhere.json (MRCNN_WEIGHTS_CATALOGUE): cannot read it"),
             qPrintable(missing));
    qunsetenv("MRCNN_WEIGHTS_CATALOGUE");
    QCOMPARE(w::activeCatalogue().size(), w::builtinCatalogue().size());
  }

  void cacheFolderFollowsXdg() {
    const QByteArray xdg = qgetenv("XDG_CACHE_HOME"), home = qgetenv("HOME");
    qputenv("XDG_CACHE_HOME", "/xdg/cache");
    qputenv("HOME", "/home/someone");
    QCOMPARE(w::weightsCacheDir(), fs::path("/xdg/cache/mrcnn-workbench/weights"));
    qputenv("XDG_CACHE_HOME", "relative/ignored");  // the XDG rules: only absolute counts
    QCOMPARE(w::weightsCacheDir(), fs::path("/home/someone/.cache/mrcnn-workbench/weights"));
    qunsetenv("XDG_CACHE_HOME");
    QCOMPARE(w::weightsCacheDir(), fs::path("/home/someone/.cache/mrcnn-workbench/weights"));
    qunsetenv("HOME");
    const QString error = errorOf([] { w::weightsCacheDir(); });
    QVERIFY2(error.contains("neither XDG_CACHE_HOME nor HOME"), qPrintable(error));
    if (!xdg.isNull()) qputenv("XDG_CACHE_HOME", xdg);
    qputenv("HOME", home);
  }

  void mirrorReplacesSchemeAndHost() {
    const std::string url = "https://download.pytorch.org/models/resnet50-0676ba61.pth";
    QCOMPARE(w::mirroredUrl(url, ""), url);
    QCOMPARE(w::mirroredUrl(url, "http://10.0.0.5:8080"),
             std::string("http://10.0.0.5:8080/models/resnet50-0676ba61.pth"));
    QCOMPARE(w::mirroredUrl(url, "https://mirror.example.org/pytorch/"),
             std::string("https://mirror.example.org/pytorch/models/resnet50-0676ba61.pth"));
    const QString error = errorOf([&] { w::mirroredUrl(url, "10.0.0.5:8080"); });
    QVERIFY2(error.contains("MRCNN_WEIGHTS_MIRROR \"10.0.0.5:8080\" has no scheme"),
             qPrintable(error));
    // The environment variable is what resolve uses when no mirror is given.
    qputenv("MRCNN_WEIGHTS_MIRROR", "http://127.0.0.1:9");
    QCOMPARE(w::mirrorFromEnvironment().value_or(""), std::string("http://127.0.0.1:9"));
    qunsetenv("MRCNN_WEIGHTS_MIRROR");
    QVERIFY(!w::mirrorFromEnvironment());
  }

  void stallTimeoutFromTheEnvironment() {
    qputenv("MRCNN_WEIGHTS_STALL_SECONDS", "7");
    QCOMPARE(w::DownloadOptions::fromEnvironment().stall_seconds, 7L);
    qputenv("MRCNN_WEIGHTS_STALL_SECONDS", "soon");
    const QString error = errorOf([] { w::DownloadOptions::fromEnvironment(); });
    QVERIFY2(error.contains("MRCNN_WEIGHTS_STALL_SECONDS \"soon\" is not a positive number"),
             qPrintable(error));
    qunsetenv("MRCNN_WEIGHTS_STALL_SECONDS");
    QCOMPARE(w::DownloadOptions::fromEnvironment().stall_seconds, 60L);
  }

  void progressReadsAsOneLine() {
    w::DownloadProgress p;
    p.bytes = 12300000;
    p.total = 97800000;
    p.bytes_per_second = 5100000;
    p.eta_seconds = 83;
    QCOMPARE(w::progressText(p), std::string("12.3 MB of 97.8 MB, 5.1 MB/s, 1 min 23 s left"));
    p.total = 0;
    p.eta_seconds = -1;
    QCOMPARE(w::progressText(p), std::string("12.3 MB, 5.1 MB/s"));
    p.done = true;
    p.total = p.bytes;
    p.eta_seconds = 0;
    QCOMPARE(w::progressText(p), std::string("12.3 MB, 5.1 MB/s, done"));
  }

  void catalogueErrorsNameTheEntry() {
    const auto parse = [](const std::string& entry) {
      return errorOf([&] { w::parseCatalogue("{\"entries\": [" + entry + "]}", "c.json"); });
    };
    const std::string url = "\"url\": \"https://h/m/a-0123abcd.pth\", ";
    const QString mistyped_hash =
        parse("{\"name\": \"torchvision:a\", " + url +
              "\"sha256_prefix\": \"0123abce\", \"kind\": \"imagenet_resnet\", \"depth\": 50}");
    QCOMPARE(mistyped_hash, QString("c.json: entry 0: sha256_prefix \"0123abce\" is not the one in "
                                    "the file name \"a-0123abcd.pth\""));
    const QString unknown_kind =
        parse("{\"name\": \"torchvision:a\", " + url +
              "\"sha256_prefix\": \"0123abcd\", \"kind\": \"detr\", \"depth\": 50}");
    QCOMPARE(unknown_kind,
             QString("c.json: entry 0: kind \"detr\" is not imagenet_resnet or mask_rcnn"));
    const QString no_namespace =
        parse("{\"name\": \"resnet50\", " + url + "\"sha256_prefix\": \"0123abcd\"}");
    QCOMPARE(no_namespace,
             QString("c.json: entry 0: name \"resnet50\" has no namespace (\"torchvision:\")"));
    const QString malformed = errorOf([] { w::parseCatalogue("{", "c.json"); });
    QVERIFY2(malformed.startsWith("c.json: not valid JSON"), qPrintable(malformed));
  }

  // ---- The built-in catalogue and COCO names against torchvision ----

  void builtinCatalogueIsTorchvisions() {
    const QString python = qEnvironmentVariable("MRCNN_PYTHON");
    if (python.isEmpty()) QSKIP("MRCNN_PYTHON is not set: no torchvision to compare with");
    const QString out = dir_.filePath("oracle.json");
    QString log;
    const QString error =
        mrcnn::testing::runReferenceScript("tests/weights/catalogue_oracle.py", {out}, &log);
    QVERIFY2(error.isEmpty(), qPrintable(error));
    QFile f(out);
    QVERIFY(f.open(QIODevice::ReadOnly));
    const QJsonObject oracle = QJsonDocument::fromJson(f.readAll()).object();
    const QJsonObject urls = oracle["weights"].toObject();

    const w::Catalogue& catalogue = w::builtinCatalogue();
    QStringList names;
    for (const w::CatalogueEntry& e : catalogue) {
      names << QString::fromStdString(e.name);
      const QString enum_name = QString::fromStdString(e.torchvision_weights);
      QVERIFY2(urls.contains(enum_name),
               qPrintable(enum_name + " is not a torchvision weights enum"));
      QCOMPARE(QString::fromStdString(e.url), urls[enum_name].toString());
      QVERIFY(QString::fromStdString(e.url).endsWith("/" + QString::fromStdString(e.file_name)));
    }
    for (const char* required :
         {"torchvision:resnet18", "torchvision:resnet34", "torchvision:resnet50",
          "torchvision:resnet101", "torchvision:maskrcnn_resnet50_fpn"}) {
      QVERIFY2(names.contains(required), required);
      QVERIFY(w::requireEntry(catalogue, required).supported);
    }
    const w::CatalogueEntry& coco = w::requireEntry(catalogue, "torchvision:maskrcnn_resnet50_fpn");
    QVERIFY(coco.kind == w::WeightsKind::kMaskRCNN);
    QCOMPARE(coco.num_classes, 91);
    QCOMPARE(w::requireEntry(catalogue, "torchvision:resnet101").depth, 101);

    const QJsonArray coco_names = oracle["coco"].toArray();
    const auto& ours = w::cocoCategoryNames();
    QCOMPARE(static_cast<qsizetype>(ours.size()), coco_names.size());
    for (qsizetype i = 0; i < coco_names.size(); ++i)
      QCOMPARE(QString::fromStdString(ours[static_cast<size_t>(i)]), coco_names[i].toString());
  }

  void specSettingsAreValidSpecText() {
    // The wizard pastes them into a spec: they must parse and validate as one.
    for (const w::CatalogueEntry& e : w::builtinCatalogue()) {
      if (e.spec_settings.empty()) continue;
      const std::string text =
          "total_steps: 10\ncheckpoint: \"" + e.name + "\"\n" + e.spec_settings + "\n";
      const mrcnn::spec::LoadedSpec loaded = mrcnn::spec::loadSpecText(text, "settings", "/specs");
      QString errors;
      for (const auto& d : loaded.errors())
        errors += QString::fromStdString(d.format()) + "\n";
      // Training data is not part of the settings: only its absence may be reported.
      for (const auto& d : loaded.errors())
        QVERIFY2(d.training_only, qPrintable(errors));
      QCOMPARE(static_cast<int>(loaded.spec.maskrcnn_config().nlayers()), e.depth);
    }
  }

  void cocoLabelsOfNames() {
    QCOMPARE(w::cocoLabelOf("person").value_or(-1), 1);
    QCOMPARE(w::cocoLabelOf(" Dog ").value_or(-1), 18);
    QCOMPARE(w::cocoLabelOf("car").value_or(-1), 3);
    QCOMPARE(w::cocoLabelOf("toothbrush").value_or(-1), 90);
    QCOMPARE(w::cocoLabelOf("motorbike").value_or(-1), w::cocoLabelOf("motorcycle").value_or(-2));
    QCOMPARE(w::cocoLabelOf("tvmonitor").value_or(-1), 72);
    QVERIFY(!w::cocoLabelOf("N/A"));
    QVERIFY(!w::cocoLabelOf("__background__"));
    QVERIFY(!w::cocoLabelOf("widget"));
  }
};

QTEST_GUILESS_MAIN(TestWeightsDownload)
#include "test_weights_download.moc"
