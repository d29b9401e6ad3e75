// Remote runs (remote/): the remote shell's quoting, the hosts file, and runs on a real
// OpenSSH server on 127.0.0.1 (tests/remote/loopback_sshd.h) whose "remote" engine is this
// build's: `mrcnn-workbench --headless SPEC --host NAME` puts the spec there, starts the
// engine detached, follows its events through a dropped connection (the server stopped with
// its sessions and started again) without losing or doubling one, and brings the run back; a
// stop request from the terminal; a wrong host key and a missing engine refused by name; the
// Runs view following a run it sent to the host.
#include <QDir>
#include <QFile>
#include <QImage>
#include <QProcess>
#include <QRegularExpression>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QtTest>

#include "remote/child_process.h"
#include "remote/hosts.h"
#include "remote/remote_run.h"
#include "remote/slurm_job.h"
#include "remote/ssh_command.h"
#include "tests/remote/loopback_sshd.h"
#include "ui/run_monitor/engine_process.h"
#include "ui/run_monitor/run_model.h"
#include "ui/run_monitor/runs_view.h"
#include "ui/spec_editor/spec_editor.h"

namespace {

using mrcnn::remote::Host;
using mrcnn::remote::HostsFile;

QString binDir() { return qEnvironmentVariable("MRCNN_BIN_DIR"); }
QString sourceDir() { return qEnvironmentVariable("MRCNN_SOURCE_DIR"); }

QByteArray readAll(const QString& path) {
  QFile f(path);
  return f.open(QIODevice::ReadOnly) ? f.readAll() : QByteArray();
}

void writeText(const QString& path, const QByteArray& text) {
  QFile f(path);
  QVERIFY(f.open(QIODevice::WriteOnly));
  f.write(text);
}

}  // namespace

class RemoteTest : public QObject {
  Q_OBJECT

 private slots:
  // Whatever a spec or a path holds reaches the remote program as one argument, unchanged.
  void argumentsSurviveTheRemoteShell() {
    const std::vector<std::string> args = {"plain", "two words", "it's", "$HOME", "`id`", "a\"b",
                                           "semi;colon", "new\nline", "", "*", "\\back"};
    std::vector<std::string> argv = {"sh", "-c",
                                     "for a in \"$@\"; do printf '%s\\0' \"$a\"; done; exit 0",
                                     "sh"};
    const std::string command = "sh -c " + mrcnn::remote::shellQuote(argv[2]) + " sh " +
                                mrcnn::remote::remoteCommand(args);
    const mrcnn::remote::ChildResult r = mrcnn::remote::runChild({"sh", "-c", command});
    QCOMPARE(r.exit_code, 0);
    std::vector<std::string> back;
    for (size_t start = 0, end; (end = r.out.find('\0', start)) != std::string::npos; start = end + 1)
      back.push_back(r.out.substr(start, end - start));
    QCOMPARE(back, args);
  }

  void hostsFileRoundTripsAndNamesItsMistakes() {
    QTemporaryDir dir;
    HostsFile hosts;
    Host h;
    h.name = "gpu1";
    h.destination = "me@gpu1.lab";
    h.port = 2222;
    h.ssh_options = {"-o", "ProxyJump=gw"};
    h.engine = "/opt/mrcnn/bin/mrcnn-engine";
    h.work_dir = "/scratch/me";
    hosts.hosts.push_back(h);
    const std::filesystem::path file = dir.filePath("config/hosts.json").toStdString();
    mrcnn::remote::saveHosts(file, hosts);
    const HostsFile back = mrcnn::remote::loadHosts(file);
    QCOMPARE(back.hosts.size(), size_t{1});
    QCOMPARE(back.find("gpu1")->port, 2222);
    QCOMPARE(back.find("gpu1")->ssh_options, h.ssh_options);
    QVERIFY(back.find("gpu2") == nullptr);
    QVERIFY(mrcnn::remote::loadHosts(dir.filePath("none.json").toStdString()).hosts.empty());

    const auto refused = [&](const QByteArray& json, const QString& expected) {
      writeText(dir.filePath("bad.json"), json);
      try {
        mrcnn::remote::loadHosts(dir.filePath("bad.json").toStdString());
      } catch (const mrcnn::remote::HostsError& e) {
        QVERIFY2(QString(e.what()).contains(expected), e.what());
        return;
      }
      QFAIL(qPrintable("accepted: " + json));
    };
    const QByteArray ok = R"("destination": "a@b", "engine": "/e", "work_dir": "/w")";
    refused(R"({"hosts": [{"name": "x", "port": 70000, )" + ok + "}]}", "hosts[0].port: expected a whole number");
    refused(R"({"hosts": [{"name": "x", "destination": "a@b", "work_dir": "/w"}]})", "hosts[0].engine: missing");
    refused(R"({"hosts": [{"name": "x", "destination": "a@b", "engine": "/e", "work_dir": "w"}]})",
            "hosts[0].work_dir: an absolute path");
    refused(R"({"hosts": [{"name": "x", )" + ok + R"(}, {"name": "x", )" + ok + "}]}", "hosts[1].name: \"x\" named twice");
    refused(R"({"hosts": [{"name": "x", "destination": "-oProxyCommand=y", "engine": "/e", "work_dir": "/w"}]})",
            "hosts[0].destination: must not start with '-'");
    refused(R"({"hosts": [{"name": "x", "colour": "red", )" + ok + "}]}", "hosts[0].colour: unknown key");
  }

  void initTestCase() {
    QVERIFY(dir_.isValid());
    sshd_ = std::make_unique<mrcnn::testing::LoopbackSshd>(dir_.filePath("sshd"));
    QDir().mkpath(dir_.filePath("sshd"));
    sshd_ok_ = sshd_->start();
  }

  // The whole loop on the loopback host, through a dropped connection.
  void aRunOnAHostIsFollowedThroughADropAndBroughtBack() {
    if (!sshd_ok_) QSKIP(qPrintable("no SSH server on 127.0.0.1 here: " + sshd_->error()));
    writeHosts(sshd_->host(binDir() + "/mrcnn-engine", dir_.filePath("host")));
    const QString local = dir_.filePath("local/run");
    QProcess run;
    // Once the engine is training there, the server goes down with its sessions and comes back.
    QByteArray out = startTraining(run, local, 12);
    QVERIFY2(out.contains("\"progress\""), run.readAllStandardError().constData());
    sshd_->stop();
    QThread::msleep(1500);
    QVERIFY2(sshd_->start(), qPrintable(sshd_->error()));
    QVERIFY(run.waitForFinished(600000));
    out += run.readAllStandardOutput();
    const QString err = QString::fromUtf8(run.readAllStandardError());
    QVERIFY2(run.exitCode() == 0, qPrintable(err));
    QVERIFY2(err.contains("dropped") && err.contains("trying again"), qPrintable(err));
    QVERIFY2(err.contains("brought back into " + local), qPrintable(err));
    // Every event once, in order: what was followed is the run's events.jsonl, byte for byte,
    // and the copy brought back is the host's.
    const QByteArray remote_events = readAll(dir_.filePath("host/runs/shapes_resnet18/events.jsonl"));
    QVERIFY(!remote_events.isEmpty());
    QCOMPARE(out, remote_events);
    QCOMPARE(readAll(local + "/events.jsonl"), remote_events);
    QVERIFY(out.contains("\"done\"") && out.contains("\"status\":\"ok\""));
    QVERIFY(QFile::exists(local + "/checkpoints/model.step-12.pt"));
    // The local run remembers its host (the GUI's Resume of a reopened run goes back there).
    QVERIFY(readAll(local + "/remote.json").contains("\"host\":\"loopback\""));
    QCOMPARE(readAll(dir_.filePath("host/runs/shapes_resnet18/engine.exit")).trimmed(), QByteArray("0"));
  }

  // Ctrl-C on the terminal: the engine there stops gracefully; the run comes back as it is;
  // the same command resumes it there.
  void aStopRequestReachesTheEngineThere() {
    if (!sshd_ok_) QSKIP(qPrintable("no SSH server on 127.0.0.1 here: " + sshd_->error()));
    writeHosts(sshd_->host(binDir() + "/mrcnn-engine", dir_.filePath("host2")));
    const QString local = dir_.filePath("local/stopped");
    QProcess run;
    QByteArray out = startTraining(run, local, 40);
    QVERIFY(out.contains("\"progress\""));
    ::kill(static_cast<pid_t>(run.processId()), SIGINT);
    QVERIFY(run.waitForFinished(300000));
    out += run.readAllStandardOutput();
    const QString err = QString::fromUtf8(run.readAllStandardError());
    QVERIFY2(err.contains("asking the engine on loopback to stop"), qPrintable(err));
    QVERIFY2(out.contains("\"status\":\"stopped\""), out.right(600).constData());
    const QString events = dir_.filePath("host2/runs/shapes_resnet18/events.jsonl");
    QCOMPARE(readAll(local + "/events.jsonl"), readAll(events));

    // The same command again resumes the run there; only its new events are shown.
    const QByteArray before = readAll(events);
    QProcess again;
    QByteArray resumed = startTraining(again, local, 40);
    QVERIFY(again.waitForFinished(600000));
    resumed += again.readAllStandardOutput();
    QVERIFY2(again.exitCode() == 0, again.readAllStandardError().constData());
    QVERIFY(resumed.startsWith("{") && !before.contains(resumed.left(200)));
    QCOMPARE(before + resumed, readAll(events));
    QVERIFY2(resumed.contains("resum"), resumed.left(2000).constData());
    QVERIFY(resumed.contains("\"status\":\"ok\""));
    QCOMPARE(readAll(local + "/events.jsonl"), readAll(events));
  }

  // The terminal went away (the launcher killed) while the engine trains there: the same
  // command finds it still running and follows it from its first event, without starting a
  // second engine in the same run.
  void aRunStillGoingIsFollowedNotStartedTwice() {
    if (!sshd_ok_) QSKIP(qPrintable("no SSH server on 127.0.0.1 here: " + sshd_->error()));
    writeHosts(sshd_->host(binDir() + "/mrcnn-engine", dir_.filePath("host6")));
    const QString local = dir_.filePath("local/again");
    QProcess first;
    QVERIFY(startTraining(first, local, 30).contains("\"progress\""));
    first.kill();
    QVERIFY(first.waitForFinished(10000));
    QProcess second;
    QByteArray out = startTraining(second, local, 30);
    QVERIFY(second.waitForFinished(600000));
    out += second.readAllStandardOutput();
    const QString err = QString::fromUtf8(second.readAllStandardError());
    QVERIFY2(second.exitCode() == 0, qPrintable(err));
    QVERIFY2(err.contains("is still running on loopback: following it"), qPrintable(err));
    const QByteArray events = readAll(dir_.filePath("host6/runs/shapes_resnet18/events.jsonl"));
    QCOMPARE(out, events);
    QCOMPARE(events.count("\"type\":\"start\""), 1);  // one engine ran
    QCOMPARE(readAll(local + "/events.jsonl"), events);
  }

  // Data the spec names that is not on the host: nothing starts, each file named with its
  // field (exit 4), and the GUI lists them with the spec's problems.
  void missingDataIsNamedAndListedWithTheSpecsProblems() {
    if (!sshd_ok_) QSKIP(qPrintable("no SSH server on 127.0.0.1 here: " + sshd_->error()));
    writeHosts(sshd_->host(binDir() + "/mrcnn-engine", dir_.filePath("host7")));
    const QString spec = sourceDir() + "/specs/labelme_example.txt";
    QProcess run;
    run.setProcessEnvironment(environment());
    run.start(binDir() + "/mrcnn-workbench", {"--headless", spec, "--host", "loopback"});
    QVERIFY(run.waitForFinished(60000));
    const QString err = QString::fromUtf8(run.readAllStandardError());
    QCOMPARE(run.exitCode(), 4);
    QVERIFY2(err.contains(spec + ": error: data_config.train_json_file: no such file or folder on loopback: "
                                 "../datasets/labelme_voc2011/annotations/instances_train.json"),
             qPrintable(err));
    QVERIFY(!QFile::exists(dir_.filePath("host7/runs")));  // nothing started

    mrcnn::ui::SpecEditor editor;
    QVERIFY(editor.openFile(spec));
    const qsizetype local = editor.problems().size();
    editor.addHostProblems("loopback", err.split('\n'));
    QVERIFY(editor.problems().size() > local);
    const mrcnn::ui::SpecProblem& p = editor.problems().back();
    QVERIFY(p.error);
    QVERIFY(p.field.startsWith("data_config."));
    QVERIFY2(p.message.startsWith("on loopback: no such file or folder on loopback: "), qPrintable(p.message));
  }

  void aWrongHostKeyIsRefused() {
    if (!sshd_ok_) QSKIP(qPrintable("no SSH server on 127.0.0.1 here: " + sshd_->error()));
    writeHosts(sshd_->host(binDir() + "/mrcnn-engine", dir_.filePath("host3"), /*wrong_key=*/true));
    QProcess run;
    run.setProcessEnvironment(environment());
    run.start(binDir() + "/mrcnn-workbench", {"--headless", sourceDir() + "/specs/shapes_resnet18.txt",
                                              "--host", "loopback"});
    QVERIFY(run.waitForFinished(60000));
    const QString err = QString::fromUtf8(run.readAllStandardError());
    QCOMPARE(run.exitCode(), 1);
    QVERIFY2(err.contains("loopback") && err.contains("Host key verification failed"), qPrintable(err));
    QVERIFY(!QFile::exists(dir_.filePath("host3")));  // nothing reached the host
  }

  void aMissingEngineOrHostIsNamed() {
    if (!sshd_ok_) QSKIP(qPrintable("no SSH server on 127.0.0.1 here: " + sshd_->error()));
    writeHosts(sshd_->host(dir_.filePath("nowhere/mrcnn-engine"), dir_.filePath("host4")));
    QProcess run;
    run.setProcessEnvironment(environment());
    run.start(binDir() + "/mrcnn-workbench", {"--headless", sourceDir() + "/specs/shapes_resnet18.txt",
                                              "--host", "loopback"});
    QVERIFY(run.waitForFinished(60000));
    QString err = QString::fromUtf8(run.readAllStandardError());
    QCOMPARE(run.exitCode(), 1);
    QVERIFY2(err.contains(dir_.filePath("nowhere/mrcnn-engine")) && err.contains("hosts file"), qPrintable(err));

    run.start(binDir() + "/mrcnn-workbench", {"--headless", sourceDir() + "/specs/shapes_resnet18.txt",
                                              "--host", "elsewhere"});
    QVERIFY(run.waitForFinished(60000));
    err = QString::fromUtf8(run.readAllStandardError());
    QCOMPARE(run.exitCode(), 2);
    QVERIFY2(err.contains("--host elsewhere: no such host") && err.contains("it names loopback"), qPrintable(err));
  }

  // A SLURM host: the batch script (shown, kept, the host's options in it) submitted with
  // sbatch, the job's place in the queue shown until it runs, its events followed, the run
  // brought back. The cluster's commands are stand-ins on the loopback host
  // (tests/remote/slurm_standin: one node, one task, 3 s in the queue).
  void aSlurmJobIsSubmittedFollowedAndBroughtBack() {
    if (!sshd_ok_) QSKIP(qPrintable("no SSH server on 127.0.0.1 here: " + sshd_->error()));
    Host host = sshd_->host(binDir() + "/mrcnn-engine", dir_.filePath("cluster"));
    host.kind = "slurm";
    host.slurm.partition = "debug";
    host.slurm.time = "00:10:00";
    host.slurm.extra = {"#SBATCH --comment=standin"};
    host.slurm.commands_dir = (sourceDir() + "/tests/remote/slurm_standin").toStdString();
    writeHosts(host);
    const QString local = dir_.filePath("local/job");
    QProcess run;
    QByteArray out = startTraining(run, local, 6);
    QVERIFY(run.waitForFinished(600000));
    out += run.readAllStandardOutput();
    const QString err = QString::fromUtf8(run.readAllStandardError());
    QVERIFY2(run.exitCode() == 0, qPrintable(err));
    const QString job_dir = dir_.filePath("cluster/runs/shapes_resnet18");
    const QByteArray script = readAll(job_dir + "/job.sbatch");
    for (const char* line : {"#SBATCH --partition=debug\n", "#SBATCH --time=00:10:00\n",
                             "#SBATCH --nodes=1\n", "#SBATCH --ntasks-per-node=1\n",
                             "#SBATCH --comment=standin\n", "echo $? > engine.exit\n"})
      QVERIFY2(script.contains(line), script.constData());
    QVERIFY2(script.contains(("#SBATCH --output=" + job_dir + "/engine.log\n").toUtf8()), script.constData());
    QVERIFY2(err.contains(QString::fromUtf8(script)), qPrintable(err));  // shown before submitting
    QVERIFY2(err.contains(QRegularExpression("job \\d+ on loopback: PENDING \\(Priority\\)")), qPrintable(err));
    QVERIFY2(err.contains(QRegularExpression("job \\d+ on loopback: RUNNING")), qPrintable(err));
    QCOMPARE(out, readAll(job_dir + "/events.jsonl"));
    QCOMPARE(readAll(local + "/events.jsonl"), out);
    QVERIFY(out.contains("\"status\":\"ok\""));
    QVERIFY(QFile::exists(local + "/checkpoints/model.step-6.pt"));

    // A GPU cluster's script: a task a GPU on each node, srun from the commands folder.
    host.slurm.nodes = 2;
    host.slurm.gpus_per_node = 4;
    const std::string gpu = mrcnn::remote::batchScript(host, {"/w/s.txt", "/w/runs/s"}, {"--task", "train"});
    for (const char* line : {"#SBATCH --nodes=2\n", "#SBATCH --ntasks-per-node=4\n",
                             "#SBATCH --gpus-per-node=4\n", "#SBATCH --gpus-per-task=1\n"})
      QVERIFY2(gpu.find(line) != std::string::npos, gpu.c_str());
    QVERIFY2(gpu.find("'" + host.slurm.commands_dir + "/srun' '" + host.engine +
                      "' '--spec' '/w/s.txt' '--run-dir' '/w/runs/s' '--task' 'train'\n") != std::string::npos,
             gpu.c_str());
  }

  // The GUI's way: the Runs view with a host chosen starts the launcher with --host, follows
  // the remote run live like a local one (rendered here: docs/screenshots/remote_run.png when
  // MRCNN_WRITE_SCREENSHOTS names a folder), and the run ends brought back.
  void theRunsViewFollowsARemoteRun() {
    if (!sshd_ok_) QSKIP(qPrintable("no SSH server on 127.0.0.1 here: " + sshd_->error()));
    writeHosts(sshd_->host(binDir() + "/mrcnn-engine", dir_.filePath("host5")));
    qputenv("XDG_CONFIG_HOME", dir_.filePath("config").toUtf8());
    qputenv("MRCNN_WORKBENCH", (binDir() + "/mrcnn-workbench").toUtf8());
    mrcnn::ui::RunsView view;
    view.resize(1500, 980);
    view.show();
    view.setTrainHost("loopback");
    const QString local = dir_.filePath("local/gui");
    QStringList overrides;
    const QStringList training = shortTraining(30);
    for (int i = 1; i < training.size(); i += 2) overrides << training[i];
    overrides << "report_frequency=1";
    view.startRun(sourceDir() + "/specs/shapes_resnet18.txt", "train", local, overrides);
    QCOMPARE(view.engine(0)->options().host, QString("loopback"));
    QTRY_VERIFY_WITH_TIMEOUT(view.run(0)->step() >= 12, 300000);
    view.refreshNow();
    QVERIFY2(view.statusText().startsWith("On host loopback: Running train on cpu"),
             qPrintable(view.statusText()));
    const QImage image = view.grab().toImage();
    QVERIFY(!image.isNull());
    const QString out_dir = qEnvironmentVariable("MRCNN_WRITE_SCREENSHOTS");
    if (!out_dir.isEmpty()) QVERIFY(image.save(QDir(out_dir).filePath("remote_run.png")));
    // Bring Back while it runs: the folder as it is there now.
    QVERIFY(view.bringBackEnabled());
    QSignalSpy brought(&view, &mrcnn::ui::RunsView::bringBackFinished);
    view.bringBackCurrent();
    QVERIFY(brought.wait(120000));
    QVERIFY2(brought.at(0).at(1).toBool(), qPrintable(view.run(0)->log().join('\n')));
    QVERIFY(readAll(local + "/events.jsonl").contains("\"progress\""));
    QSignalSpy finished(&view, &mrcnn::ui::RunsView::runFinished);
    QVERIFY(finished.wait(600000));
    view.refreshNow();
    QCOMPARE(view.run(0)->status(), mrcnn::ui::RunStatus::Ok);
    QCOMPARE(readAll(local + "/events.jsonl"), readAll(dir_.filePath("host5/runs/shapes_resnet18/events.jsonl")));
    qunsetenv("XDG_CONFIG_HOME");
    qunsetenv("MRCNN_WORKBENCH");
  }

  void cleanupTestCase() { sshd_.reset(); }

 private:
  QProcessEnvironment environment() const {
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    env.insert("XDG_CONFIG_HOME", dir_.filePath("config"));
    return env;
  }
  void writeHosts(const Host& host) {
    HostsFile hosts;
    hosts.hosts.push_back(host);
    mrcnn::remote::saveHosts(dir_.filePath("config/mrcnn-workbench/hosts.json").toStdString(), hosts);
  }
  // Starts `mrcnn-workbench --headless SPEC --host loopback --raw-events` training `steps`
  // steps into `local`; returns its output up to the first progress event (or its end).
  QByteArray startTraining(QProcess& run, const QString& local, int steps) const {
    run.setProcessEnvironment(environment());
    run.start(binDir() + "/mrcnn-workbench",
              QStringList{"--headless", sourceDir() + "/specs/shapes_resnet18.txt", "--host", "loopback",
                          "--raw-events", "--run-dir", local} +
                  shortTraining(steps));
    QByteArray out;
    for (int i = 0; i < 600 && !out.contains("\"progress\""); ++i) {
      run.waitForReadyRead(500);
      out += run.readAllStandardOutput();
      if (run.state() == QProcess::NotRunning) break;
    }
    return out;
  }
  // The shapes spec trained `steps` small steps on a tiny generated set (its paths absolute:
  // the spec's own folder on the host is the work folder).
  QStringList shortTraining(int steps) const {
    return {"--set", "data_config.shapes_dataset.root=" + dir_.filePath("shapes"),
            "--set", "data_config.shapes_dataset.train_images=6",
            "--set", "data_config.shapes_dataset.val_images=3",
            "--set", "device=cpu",
            "--set", "train_batch_size=2",
            "--set", "total_steps=" + QString::number(steps),
            "--set", "num_steps_per_eval=" + QString::number(steps),
            "--set", "save_checkpoints_steps=" + QString::number(steps),
            "--set", "logging_frequency=1"};
  }

  QTemporaryDir dir_;
  std::unique_ptr<mrcnn::testing::LoopbackSshd> sshd_;
  bool sshd_ok_ = false;
};

QTEST_MAIN(RemoteTest)
#include "test_remote.moc"
