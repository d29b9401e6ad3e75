// SLURM: the README's batch script, taken from README.md as written, run the way sbatch runs
// it on a one-node job of 2 tasks (SLURM_JOB_ID, SLURM_JOB_NODELIST, SLURM_NTASKS,
// SLURM_NTASKS_PER_NODE set as sbatch sets them; tests/app/slurm_tasks/srun starting the
// tasks with SLURM_PROCID and SLURM_LOCALID as srun does). The two engines must find each
// other with no MASTER_ADDR or MASTER_PORT (the job's first host, 29500 + the job id's last
// four digits) and train together: world size 2, the final checkpoint written by 2 ranks.
// Also the launch environment's rules on their own: the host list's first host, the port, and
// the messages when a job's rendezvous cannot be known.
#include <QDir>
#include <QFile>
#include <QProcess>
#include <QRegularExpression>
#include <QTemporaryDir>
#include <QtTest>

#include "engine/dist/launch_env.h"
#include "specs/events.h"

namespace {

QString sourceDir() { return qEnvironmentVariable("MRCNN_SOURCE_DIR"); }

QString readAll(const QString& path) {
  QFile f(path);
  return f.open(QIODevice::ReadOnly) ? QString::fromUtf8(f.readAll()) : QString();
}

// The README's sbatch script: the fenced block that starts with "#!/bin/bash\n#SBATCH".
QString readmeBatchScript() {
  const QString readme = readAll(sourceDir() + "/README.md");
  const QRegularExpression block("```sh\n(#!/bin/bash\n#SBATCH.*?)```",
                                 QRegularExpression::DotMatchesEverythingOption);
  const QRegularExpressionMatch m = block.match(readme);
  return m.hasMatch() ? m.captured(1) : QString();
}

mrcnn::dist::LaunchEnvResult launchFrom(const std::map<std::string, std::string>& vars) {
  return mrcnn::dist::readLaunchEnv([&](const char* name) -> const char* {
    const auto it = vars.find(name);
    return it == vars.end() ? nullptr : it->second.c_str();
  });
}

}  // namespace

class SlurmLaunchTest : public QObject {
  Q_OBJECT

 private slots:
  void hostListsPortsAndMessages() {
    using mrcnn::dist::firstSlurmHost;
    QCOMPARE(firstSlurmHost("gpu[03-05,09],login1"), std::string("gpu03"));
    QCOMPARE(firstSlurmHost("node7,node8"), std::string("node7"));
    QCOMPARE(firstSlurmHost("rack1-n[12]-ib"), std::string("rack1-n12-ib"));
    QCOMPARE(firstSlurmHost("bad[x]"), std::string());
    QCOMPARE(firstSlurmHost("open[1-2"), std::string());

    auto r = launchFrom({{"SLURM_PROCID", "3"}, {"SLURM_NTASKS", "8"}, {"SLURM_LOCALID", "3"},
                         {"SLURM_NTASKS_PER_NODE", "4(x2)"}, {"SLURM_JOB_ID", "1234567"},
                         {"SLURM_JOB_NODELIST", "gpu[07-08]"}});
    QVERIFY2(r.env, r.error.c_str());
    QCOMPARE(r.env->launcher, std::string("slurm"));
    QCOMPARE(r.env->rank, 3);
    QCOMPARE(r.env->world_size, 8);
    QCOMPARE(r.env->local_world_size, 8);  // "4(x2)": not a plain count
    QCOMPARE(r.env->master_addr, std::string("gpu07"));
    QCOMPARE(r.env->master_port, uint16_t{29500 + 4567});
    // The job script's own values win.
    r = launchFrom({{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "2"}, {"SLURM_JOB_ID", "5"},
                    {"SLURM_JOB_NODELIST", "gpu1"}, {"MASTER_ADDR", "10.0.0.9"},
                    {"MASTER_PORT", "40000"}});
    QVERIFY2(r.env, r.error.c_str());
    QCOMPARE(r.env->master_addr, std::string("10.0.0.9"));
    QCOMPARE(r.env->master_port, uint16_t{40000});
    // No way to know rank 0's machine: named.
    r = launchFrom({{"SLURM_PROCID", "1"}, {"SLURM_NTASKS", "2"}});
    QVERIFY(!r.env);
    QCOMPARE(r.error, std::string("MASTER_ADDR=(unset): a job of 2 processes needs the address of "
                                  "rank 0's machine (or SLURM_JOB_NODELIST, whose first host is taken)"));
    // A group of one when forced: on its own, or under a launcher with a world of one.
    r = launchFrom({});
    QVERIFY(r.env && !r.env->distributed());
    r = launchFrom({{"MRCNN_DIST_FORCE_GROUP", "1"}});
    QVERIFY2(r.env, r.error.c_str());
    QVERIFY(r.env->distributed() && r.env->force_group);
    QCOMPARE(r.env->world_size, 1);
    QCOMPARE(r.env->master_addr, std::string("127.0.0.1"));
    QCOMPARE(r.env->master_port, uint16_t{29500});
    r = launchFrom({{"MRCNN_DIST_FORCE_GROUP", "1"}, {"MASTER_PORT", "70000"}});
    QVERIFY(!r.env);
    QCOMPARE(r.error, std::string("MASTER_PORT=70000: a TCP port (1-65535) is needed"));
    r = launchFrom({{"MRCNN_DIST_FORCE_GROUP", "1"}, {"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "1"},
                    {"SLURM_JOB_ID", "77"}});
    QVERIFY2(r.env, r.error.c_str());
    QVERIFY(r.env->distributed());
    QCOMPARE(r.env->launcher, std::string("slurm"));
    QCOMPARE(r.env->master_addr, std::string("127.0.0.1"));
    QCOMPARE(r.env->master_port, uint16_t{29500 + 77});
    // torchrun's variables still need both.
    r = launchFrom({{"RANK", "1"}, {"WORLD_SIZE", "2"}, {"MASTER_ADDR", "127.0.0.1"}});
    QVERIFY(!r.env);
    QCOMPARE(r.error, std::string("MASTER_PORT=(unset): a TCP port (1-65535) is needed"));
  }

  void readmesBatchScriptTrainsTwoRanks() {
    const QString script = readmeBatchScript();
    QVERIFY2(script.contains("\nsrun mrcnn-engine "), qPrintable(script));
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    const QString path = dir.filePath("train.sbatch");
    {
      QFile f(path);
      QVERIFY(f.open(QIODevice::WriteOnly));
      f.write(script.toUtf8());
    }
    // PATH: srun's stand-in, and mrcnn-engine as an installed command.
    const QString bin = dir.filePath("bin");
    QVERIFY(QDir().mkpath(bin));
    QVERIFY(QFile::link(qEnvironmentVariable("MRCNN_BIN_DIR") + "/mrcnn-engine", bin + "/mrcnn-engine"));
    QVERIFY(QFile::link(sourceDir() + "/tests/app/slurm_tasks/srun", bin + "/srun"));

    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    for (const char* var : {"MASTER_ADDR", "MASTER_PORT", "RANK", "WORLD_SIZE", "LOCAL_RANK"})
      env.remove(var);
    env.insert("PATH", bin + ":" + env.value("PATH"));
    env.insert("SLURM_JOB_ID", "64242");  // port 29500 + 4242
    env.insert("SLURM_JOB_NODELIST", "localhost");
    env.insert("SLURM_NNODES", "1");
    env.insert("SLURM_NTASKS", "2");
    env.insert("SLURM_NTASKS_PER_NODE", "2");
    const QString run = dir.filePath("run");
    QStringList args = {path, sourceDir() + "/specs/shapes_resnet18.txt", "--run-dir", run};
    for (const QString& s : QStringList{"device=cpu", "total_steps=2", "save_checkpoints_steps=0", "num_steps_per_eval=0",
          "train_batch_size=1", "eval_batch_size=1", "data_config.eval_samples=2",
          "data_config.shapes_dataset.root=" + dir.filePath("data"),
          "data_config.shapes_dataset.train_images=4", "data_config.shapes_dataset.val_images=2",
          "data_config.image_size=(128, 128)", "maskrcnn_config.nlayers=10"})
      args << "--set" << s;
    QProcess p;
    p.setProcessEnvironment(env);
    p.start("/bin/bash", args);
    QVERIFY(p.waitForFinished(300000));
    const QString err = QString::fromUtf8(p.readAllStandardError());
    QVERIFY2(p.exitStatus() == QProcess::NormalExit && p.exitCode() == 0, qPrintable(err.right(3000)));

    const QString log = readAll(run + "/log.txt");
    QVERIFY2(log.contains("process group: rank 0 of 2 (gloo, launcher slurm, master 127.0.0.1:33742)"),
             qPrintable(log.left(3000)));
    std::optional<mrcnn::events::Event> start;
    for (const QString& line : readAll(run + "/events.jsonl").split('\n')) {
      auto e = mrcnn::events::parseJsonLine(line.toStdString());
      if (e && e->type() == "start" && !start) start = e;
    }
    QVERIFY(start);
    QCOMPARE(start->world_size(), 2u);
    QVERIFY(QFile::exists(run + "/checkpoints/model.step-2.pt"));
  }
};

QTEST_GUILESS_MAIN(SlurmLaunchTest)
#include "test_slurm_launch.moc"
