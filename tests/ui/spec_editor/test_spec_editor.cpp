// The spec editor: a spec loaded fills the form; a form edit rewrites only its field's
// statement, as one undo step; a text edit refreshes the form; a bad spec shows each error
// at its line, in the text and on the field; a TAO spec opens and saves byte for byte; Run
// saves first and refuses a spec with errors.
#include <QApplication>
#include <QCheckBox>
#include <QComboBox>
#include <QFile>
#include <QGroupBox>
#include <QLineEdit>
#include <QPlainTextEdit>
#include <QSignalSpy>
#include <QSpinBox>
#include <QTemporaryDir>
#include <QTextBlock>
#include <QToolButton>
#include <QtTest>

#include "ui/spec_editor/field_editors.h"
#include "ui/spec_editor/form_sections.h"
#include "ui/spec_editor/problems_view.h"
#include "ui/spec_editor/spec_editor.h"
#include "ui/spec_editor/spec_form.h"
#include "ui/spec_editor/spec_text_patch.h"
#include "ui/spec_highlighter.h"

using namespace mrcnn::ui;
namespace gp = google::protobuf;

namespace {

QString sourcePath(const QString& relative) {
  const QString root = qEnvironmentVariable("MRCNN_SOURCE_DIR");
  if (root.isEmpty()) qFatal("MRCNN_SOURCE_DIR is not set (ctest sets it)");
  return root + u'/' + relative;
}

QByteArray readFile(const QString& path) {
  QFile f(path);
  if (!f.open(QIODevice::ReadOnly)) qFatal("cannot read %s", qPrintable(path));
  return f.readAll();
}

// Lines of `after` that differ from `before`, when both have the same number of lines;
// otherwise the lines of `after` that `before` does not have at that place, shifted.
QStringList changedLines(const QString& before, const QString& after) {
  const QStringList a = before.split(u'\n'), b = after.split(u'\n');
  QStringList out;
  qsizetype i = 0;
  while (i < a.size() && i < b.size() && a[i] == b[i])
    ++i;
  qsizetype ja = a.size(), jb = b.size();
  while (ja > i && jb > i && a[ja - 1] == b[jb - 1]) {
    --ja;
    --jb;
  }
  for (qsizetype k = i; k < jb; ++k)
    out.push_back(b[k]);
  for (qsizetype k = i; k < ja; ++k)
    out.push_back(u"-"_qs + a[k]);
  return out;
}

// A valid literal for any scalar field, for the round-trip test.
QString sampleLiteral(const gp::FieldDescriptor* f) {
  if (f->is_repeated()) return u"[\"a\", \"b\"]"_qs;
  switch (f->cpp_type()) {
    case gp::FieldDescriptor::CPPTYPE_BOOL:
      return u"true"_qs;
    case gp::FieldDescriptor::CPPTYPE_ENUM:
      return QString::fromStdString(f->enum_type()->value(1)->name());
    case gp::FieldDescriptor::CPPTYPE_STRING:
      return u"\"x\""_qs;
    case gp::FieldDescriptor::CPPTYPE_FLOAT:
    case gp::FieldDescriptor::CPPTYPE_DOUBLE:
      return u"0.25"_qs;
    default:
      return u"3"_qs;
  }
}

void typeInto(QWidget* w, const QString& text) {
  w->setFocus();
  if (auto* spin = qobject_cast<QAbstractSpinBox*>(w)) spin->selectAll();
  if (auto* line = qobject_cast<QLineEdit*>(w)) line->selectAll();
  QTest::keyClicks(w, text);
  QTest::keyClick(w, Qt::Key_Return);
}

}  // namespace

class SpecEditorTest : public QObject {
  Q_OBJECT

 private slots:
  void patchReplacesAValueInPlace() {
    const QString text =
        u"# head\nseed: 1  # why\nmaskrcnn_config {\n  nlayers: 18 # depth\n}\n"_qs;
    QCOMPARE(spectext::setField(text, u"maskrcnn_config.nlayers"_qs, u"50"_qs),
             u"# head\nseed: 1  # why\nmaskrcnn_config {\n  nlayers: 50 # depth\n}\n"_qs);
    QCOMPARE(spectext::setField(text, u"seed"_qs, u"7"_qs),
             u"# head\nseed: 7  # why\nmaskrcnn_config {\n  nlayers: 18 # depth\n}\n"_qs);
  }

  void patchInsertsWithTheBlocksIndentation() {
    const QString text = u"seed: 1\ndata_config{\n\tnum_classes: 3\n}\n"_qs;
    QCOMPARE(spectext::setField(text, u"data_config.min_size"_qs, u"600"_qs),
             u"seed: 1\ndata_config{\n\tnum_classes: 3\n\tmin_size: 600\n}\n"_qs);
    // A top-level scalar goes after the last top-level scalar, not after the blocks.
    QCOMPARE(spectext::setField(text, u"use_amp"_qs, u"true"_qs),
             u"seed: 1\nuse_amp: true\ndata_config{\n\tnum_classes: 3\n}\n"_qs);
    // One-line blocks stay on their line.
    QCOMPARE(spectext::setField(u"data_config { num_classes: 3 }"_qs, u"data_config.min_size"_qs,
                                u"600"_qs),
             u"data_config { num_classes: 3 min_size: 600 }"_qs);
  }

  void patchCreatesMissingBlocks() {
    QCOMPARE(spectext::setField(u"seed: 1\n"_qs, u"data_config.shapes_dataset.seed"_qs, u"7"_qs),
             u"seed: 1\n\ndata_config {\n  shapes_dataset {\n    seed: 7\n  }\n}\n"_qs);
    QCOMPARE(spectext::ensureBlock(u"data_config {\n  num_classes: 3\n}\n"_qs,
                                   u"data_config.shapes_dataset"_qs),
             u"data_config {\n  num_classes: 3\n  shapes_dataset {\n  }\n}\n"_qs);
  }

  void patchClearsOnlyTheStatement() {
    const QString text =
        u"seed: 1\n# about momentum\nmomentum: 0.9  # sgd\nwarmup_steps: 3\n"_qs
        u"data_config {\n  shapes_dataset {\n    seed: 1\n  }\n  n_workers: 2\n}\n"_qs;
    QCOMPARE(spectext::clearField(text, u"momentum"_qs),
             u"seed: 1\n# about momentum\nwarmup_steps: 3\n"_qs
             u"data_config {\n  shapes_dataset {\n    seed: 1\n  }\n  n_workers: 2\n}\n"_qs);
    QCOMPARE(spectext::clearField(text, u"data_config.shapes_dataset"_qs),
             u"seed: 1\n# about momentum\nmomentum: 0.9  # sgd\nwarmup_steps: 3\n"_qs
             u"data_config {\n  n_workers: 2\n}\n"_qs);
    QCOMPARE(spectext::clearField(u"seed: 1 momentum: 0.9\n"_qs, u"seed"_qs),
             u"momentum: 0.9\n"_qs);
  }

  // Every field of the form, set on the sample spec through the patcher, parses back with the
  // value set and no syntax error: the patcher writes valid protobuf text for every type.
  void everyFieldRoundTripsThroughTheText() {
    const QString base = QString::fromUtf8(readFile(sourcePath(u"specs/shapes_resnet18.txt"_qs)));
    SpecForm form;
    QVERIFY(form.fieldPaths().size() > 100);
    for (const QString& path : form.fieldPaths()) {
      const gp::FieldDescriptor* f = form.editor(path)->field();
      const QString text = spectext::setField(base, path, sampleLiteral(f));
      const auto loaded = mrcnn::spec::loadSpecText(text.toStdString(), "t.txt", "/tmp");
      for (const auto& d : loaded.diagnostics) {
        QVERIFY2(d.kind != mrcnn::spec::Diagnostic::Kind::Syntax &&
                     d.kind != mrcnn::spec::Diagnostic::Kind::UnknownField &&
                     d.kind != mrcnn::spec::Diagnostic::Kind::Type,
                 qPrintable(path + u": "_qs + QString::fromStdString(d.format())));
      }
      // Walk to the holder and check the field is there.
      const gp::Message* holder = &loaded.spec;
      const QStringList parts = path.split(u'.');
      for (qsizetype i = 0; i + 1 < parts.size(); ++i) {
        const auto* block = holder->GetDescriptor()->FindFieldByName(parts[i].toStdString());
        holder = &holder->GetReflection()->GetMessage(*holder, block);
      }
      const bool present = f->is_repeated() ? holder->GetReflection()->FieldSize(*holder, f) == 2
                                            : holder->GetReflection()->HasField(*holder, f);
      QVERIFY2(present, qPrintable(path));
      QVERIFY2(spectext::findField(spectext::clearField(text, path), path).isEmpty(),
               qPrintable(path));
    }
  }

  // The form finds its fields: every field of the top level, data_config and maskrcnn_config
  // sits in a named section (none left in "Other": the table covers the schema); the find box
  // keeps the fields whose name or help has the text; "changed from default" keeps those the
  // sample spec sets to another value than the default (seed: 123 and momentum: 0.9 are the
  // defaults and hide); empty sections and blocks hide.
  void formSectionsAndFilter() {
    SpecEditor editor;
    QVERIFY(editor.openFile(sourcePath(u"specs/shapes_resnet18.txt"_qs)));
    SpecForm* form = editor.form();
    for (const QString& path : form->fieldPaths()) {
      const QString block = path.contains(u'.') ? path.section(u'.', 0, -2) : QString();
      if (!block.isEmpty() && block != u"data_config"_qs && block != u"maskrcnn_config"_qs)
        continue;
      const QString title = formSectionOf(path);
      QVERIFY2(!title.isEmpty() && title != u"Other"_qs, qPrintable(path));
      QGroupBox* box = form->section(block + u'/' + title);
      QVERIFY2(box && box->isAncestorOf(form->editor(path)), qPrintable(path));
    }
    QVERIFY(form->section(u"/Learning rate"_qs)->isAncestorOf(form->editor(u"warmup_steps"_qs)));
    QVERIFY(form->section(u"maskrcnn_config/Anchors"_qs)
                ->isAncestorOf(form->editor(u"maskrcnn_config.anchor_scale"_qs)));

    editor.resize(1200, 800);
    editor.show();
    QVERIFY(QTest::qWaitForWindowExposed(&editor));
    QTest::keyClicks(editor.findField(), u"WARMUP"_qs);
    QVERIFY(form->isFieldShown(u"warmup_steps"_qs));
    QVERIFY(form->isFieldShown(u"warmup_learning_rate"_qs));
    QVERIFY(!form->isFieldShown(u"total_steps"_qs));
    QVERIFY(!form->editor(u"total_steps"_qs)->isVisible());
    QVERIFY(form->editor(u"warmup_steps"_qs)->isVisible());
    QVERIFY(!form->section(u"/Optimizer"_qs)->isVisible());
    QVERIFY(!form->group(u"maskrcnn_config"_qs)->isVisible());
    // By help: "aspect_ratios" says "(width, height)".
    editor.findField()->setText(u"width, height"_qs);
    QVERIFY(form->isFieldShown(u"maskrcnn_config.aspect_ratios"_qs));
    QVERIFY(form->group(u"maskrcnn_config"_qs)->isVisible());
    QVERIFY(form->section(u"maskrcnn_config/Anchors"_qs)->isVisible());

    editor.findField()->clear();
    editor.changedOnly()->setChecked(true);
    for (const char* changed : {"total_steps", "train_batch_size", "warmup_steps", "use_amp",
                                "data_config.num_classes", "maskrcnn_config.nlayers"})
      QVERIFY2(form->isFieldShown(QString::fromLatin1(changed)), changed);
    for (const char* same : {"seed", "momentum", "init_learning_rate", "data_config.n_workers",
                             "maskrcnn_config.arch", "l1_weight_decay"})
      QVERIFY2(!form->isFieldShown(QString::fromLatin1(same)), same);
    QVERIFY(!form->editor(u"seed"_qs)->isVisible());
    // The text changes seed to another value: the form follows and shows it.
    editor.textEdit()->setPlainText(
        editor.textEdit()->toPlainText().replace(u"seed: 123"_qs, u"seed: 7"_qs));
    editor.validateNow();
    QVERIFY(form->isFieldShown(u"seed"_qs));
    QVERIFY(form->editor(u"seed"_qs)->isVisible());
    editor.changedOnly()->setChecked(false);
    QVERIFY(form->editor(u"seed"_qs)->isVisible());
    QVERIFY(form->section(u"/Optimizer"_qs)->isVisible());
  }

  void loadedSpecFillsTheForm() {
    SpecEditor editor;
    QVERIFY(editor.openFile(sourcePath(u"specs/shapes_resnet18.txt"_qs)));
    QVERIFY2(!editor.hasErrors(), qPrintable(editor.problems().value(0).text));
    SpecForm* form = editor.form();
    QCOMPARE(form->editor(u"total_steps"_qs)->literal(), u"2650"_qs);
    QCOMPARE(form->editor(u"maskrcnn_config.nlayers"_qs)->literal(), u"18"_qs);
    QCOMPARE(form->editor(u"init_learning_rate"_qs)->literal(), u"0.02"_qs);
    QCOMPARE(form->editor(u"l2_weight_decay"_qs)->literal(), u"0.0001"_qs);
    QCOMPARE(form->editor(u"data_config.augment_input_data"_qs)->literal(), u"true"_qs);
    QCOMPARE(form->editor(u"maskrcnn_config.freeze_bn"_qs)->literal(), u"false"_qs);
    QCOMPARE(form->editor(u"maskrcnn_config.arch"_qs)->literal(), u"\"resnet\""_qs);
    QCOMPARE(form->editor(u"output_dir"_qs)->literal(), u"\"../runs\""_qs);
    QCOMPARE(form->editor(u"data_config.shapes_dataset.seed"_qs)->literal(), u"2026"_qs);
    QCOMPARE(form->editor(u"maskrcnn_config.aspect_ratios"_qs)->literal(),
             u"\"[(1.0, 1.0), (1.4, 0.7), (0.7, 1.4)]\""_qs);
    // Absent fields: not set, their default shown greyed.
    FieldEditor* amp = form->editor(u"visualize_images_summary"_qs);
    QVERIFY(!amp->isSet());
    QCOMPARE(amp->literal(), QString());
    auto* resize = qobject_cast<QComboBox*>(form->editor(u"data_config.resize_mode"_qs)->input());
    QVERIFY(resize);
    QCOMPARE(resize->currentIndex(), -1);
    QCOMPARE(resize->placeholderText(), u"fixed"_qs);
    auto* epochs = qobject_cast<QSpinBox*>(form->editor(u"num_epochs"_qs)->input());
    QVERIFY(epochs);
    QCOMPARE(epochs->text(), QString());
    auto* clip = qobject_cast<QLineEdit*>(form->editor(u"global_gradient_clip_ratio"_qs)->input());
    QVERIFY(clip);
    QCOMPARE(clip->text(), QString());
    QCOMPARE(clip->placeholderText(), u"0"_qs);
    // Editors by type, and the (help) option as tooltip.
    QVERIFY(qobject_cast<QSpinBox*>(form->editor(u"seed"_qs)->input()));
    QVERIFY(qobject_cast<QCheckBox*>(form->editor(u"use_amp"_qs)->input()));
    QVERIFY(qobject_cast<QComboBox*>(form->editor(u"wandb_config.mode"_qs)->input()));
    QCOMPARE(form->editor(u"momentum"_qs)->input()->toolTip(), u"SGD momentum"_qs);
    QCOMPARE(pathKindOf(form->editor(u"data_config.train_image_dir"_qs)->field()),
             PathKind::Folder);
    QCOMPARE(pathKindOf(form->editor(u"checkpoint"_qs)->field()), PathKind::File);
    // Blocks: checked when written in the spec.
    QVERIFY(form->group(u"data_config.shapes_dataset"_qs)->isChecked());
    QVERIFY(!form->group(u"wandb_config"_qs)->isChecked());
    QVERIFY(!editor.isModified());
  }

  void formEditsRewriteOnlyTheirLineAsOneUndoStep() {
    SpecEditor editor;
    editor.show();
    QVERIFY(QTest::qWaitForWindowExposed(&editor));
    QVERIFY(editor.openFile(sourcePath(u"specs/shapes_resnet18.txt"_qs)));
    const QString original = editor.text();
    SpecForm* form = editor.form();

    typeInto(form->editor(u"maskrcnn_config.nlayers"_qs)->input(), u"34"_qs);
    QCOMPARE(changedLines(original, editor.text()),
             QStringList{u"  nlayers: 34"_qs} << u"-  nlayers: 18"_qs);
    QVERIFY(editor.isModified());
    const QString after_depth = editor.text();

    auto* amp = qobject_cast<QCheckBox*>(form->editor(u"visualize_images_summary"_qs)->input());
    amp->click();
    QCOMPARE(changedLines(after_depth, editor.text()),
             QStringList{u"visualize_images_summary: true"_qs});
    QVERIFY(form->editor(u"visualize_images_summary"_qs)->isSet());
    const QString after_amp = editor.text();

    auto* resize = qobject_cast<QComboBox*>(form->editor(u"data_config.resize_mode"_qs)->input());
    resize->setCurrentIndex(1);
    emit resize->activated(1);  // what a choice in the drop-down emits
    QCOMPARE(changedLines(after_amp, editor.text()),
             QStringList{u"  resize_mode: \"shorter_side\""_qs});
    const QString after_resize = editor.text();

    typeInto(form->editor(u"data_config.shapes_dataset.root"_qs)->input(), u"../data/shapes"_qs);
    QCOMPARE(
        changedLines(after_resize, editor.text()),
        QStringList{u"    root: \"../data/shapes\""_qs} << u"-    root: \"../datasets/shapes\""_qs);
    const QString after_root = editor.text();

    // The reset button removes the statement: the default applies again.
    auto* reset = form->editor(u"momentum"_qs)->findChild<QToolButton*>();
    QVERIFY(reset && reset->isEnabled());
    reset->click();
    QCOMPARE(changedLines(after_root, editor.text()), QStringList{u"-momentum: 0.9"_qs});
    QVERIFY(!form->editor(u"momentum"_qs)->isSet());

    // Each form edit is one undo step, and undo restores the text exactly.
    editor.undo();
    QCOMPARE(editor.text(), after_root);
    QVERIFY(form->editor(u"momentum"_qs)->isSet());
    editor.undo();
    QCOMPARE(editor.text(), after_resize);
    editor.undo();
    QCOMPARE(editor.text(), after_amp);
    editor.undo();
    QCOMPARE(editor.text(), after_depth);
    editor.undo();
    QCOMPARE(editor.text(), original);
    QCOMPARE(form->editor(u"maskrcnn_config.nlayers"_qs)->literal(), u"18"_qs);
    QVERIFY(!editor.isModified());
    editor.redo();
    QCOMPARE(editor.text(), after_depth);
    QCOMPARE(form->editor(u"maskrcnn_config.nlayers"_qs)->literal(), u"34"_qs);
  }

  void textEditsRefreshTheForm() {
    SpecEditor editor;
    QVERIFY(editor.openFile(sourcePath(u"specs/shapes_resnet18.txt"_qs)));
    QTextDocument* doc = editor.textEdit()->document();
    QTextCursor found = doc->find(u"nlayers: 18"_qs);
    QVERIFY(!found.isNull());
    found.insertText(u"nlayers: 101"_qs);
    QTextCursor end(doc);
    end.movePosition(QTextCursor::End);
    end.insertText(u"visualize_images_summary: True\n"_qs);
    // Validation waits for a pause in typing, then the form follows.
    QTRY_COMPARE_WITH_TIMEOUT(editor.form()->editor(u"maskrcnn_config.nlayers"_qs)->literal(),
                              u"101"_qs, 3000);
    QVERIFY(editor.form()->editor(u"visualize_images_summary"_qs)->isSet());
    QCOMPARE(editor.form()->editor(u"visualize_images_summary"_qs)->literal(), u"true"_qs);
  }

  void badSpecShowsErrorsAtTheirLineAndField() {
    SpecEditor editor;
    editor.show();
    QVERIFY(QTest::qWaitForWindowExposed(&editor));
    editor.setText(
        u"seed: 1\n"_qs
        "maskrcnn_config {\n"
        "  nlayers: 12\n"
        "}\n"
        "data_config {\n"
        "  num_clases: 3\n"
        "  image_size: \"(256, 320\"\n"
        "}\n"_qs);
    const QList<SpecProblem>& problems = editor.problems();
    QVERIFY(editor.hasErrors());
    const auto at = [&](const QString& field) -> SpecProblem {
      for (const SpecProblem& p : problems) {
        if (p.field == field) return p;
      }
      return {};
    };
    QCOMPARE(at(u"maskrcnn_config.nlayers"_qs).line, 3);
    QCOMPARE(at(u"maskrcnn_config.nlayers"_qs).column, 3);
    QCOMPARE(at(u"data_config.num_clases"_qs).line, 6);
    QCOMPARE(at(u"data_config.num_clases"_qs).column, 3);
    QVERIFY(at(u"data_config.num_clases"_qs).message.contains(u"num_classes"_qs));
    QCOMPARE(at(u"data_config.image_size"_qs).line, 7);

    // On the field in the form: the editor is flagged; an unknown field flags its block.
    SpecForm* form = editor.form();
    QVERIFY(form->editor(u"maskrcnn_config.nlayers"_qs)->problem().contains(u"12"_qs));
    QVERIFY(!form->editor(u"data_config.image_size"_qs)->problem().isEmpty());
    QVERIFY(form->editor(u"seed"_qs)->problem().isEmpty());
    QVERIFY(form->group(u"data_config"_qs)->title().contains(u"problem"_qs));
    QVERIFY(!form->group(u"maskrcnn_config"_qs)->title().contains(u"problem"_qs));

    // In the text: marks on exactly the lines with problems.
    QSet<int> marked;
    for (const auto& mark : editor.textEdit()->extraSelections())
      marked.insert(mark.cursor.blockNumber() + 1);
    // Line 5: data_config has no training data (the validator's rule, placed at the block).
    QCOMPARE(marked, (QSet<int>{3, 5, 6, 7}));
    // A problem without a line (total_steps missing) still flags its field.
    QVERIFY(!form->editor(u"total_steps"_qs)->problem().isEmpty());

    // In the list: activating a problem puts the cursor at its line and column.
    ProblemsView list;
    list.attach(&editor);
    QCOMPARE(list.topLevelItemCount(), problems.size());
    int row = -1;
    for (int i = 0; i < problems.size(); ++i) {
      if (problems[i].field == u"data_config.num_clases"_qs) row = i;
    }
    QVERIFY(row >= 0);
    emit list.itemActivated(list.topLevelItem(row), 0);
    QCOMPARE(editor.textEdit()->textCursor().blockNumber(), 5);
    QCOMPARE(editor.textEdit()->textCursor().positionInBlock(), 2);

    // Fixed, the marks and flags go away.
    editor.setText(QString::fromUtf8(readFile(sourcePath(u"specs/shapes_resnet18.txt"_qs))));
    QVERIFY(!editor.hasErrors());
    QVERIFY(editor.textEdit()->extraSelections().isEmpty());
    QVERIFY(form->editor(u"maskrcnn_config.nlayers"_qs)->problem().isEmpty());
    QVERIFY(!form->group(u"data_config"_qs)->title().contains(u"problem"_qs));
    QCOMPARE(list.topLevelItemCount(), 0);
  }

  void columnsCountCharactersNotBytes() {
    SpecEditor editor;
    // "é" is two bytes in UTF-8: the error's byte column 22 is character column 21.
    editor.setText(u"run_name: \"é\"  nlayers: 3\n"_qs);
    QVERIFY(editor.hasErrors());
    const SpecProblem p = editor.problems().front();
    QCOMPARE(p.line, 1);
    QCOMPARE(editor.text().mid(p.column - 1, 7), u"nlayers"_qs);
  }

  void taoSpecOpensAndSavesUnmodified() {
    const QString source = sourcePath(u"tests/specs/data/tao_maskrcnn_sample.txt"_qs);
    SpecEditor editor;
    QVERIFY(editor.openFile(source));
    QVERIFY2(!editor.hasErrors(), qPrintable(editor.problems().value(0).text));
    QTemporaryDir dir;
    const QString copy = dir.filePath(u"tao.txt"_qs);
    QVERIFY(editor.saveAs(copy));
    QCOMPARE(readFile(copy), readFile(source));
    QCOMPARE(editor.filePath(), copy);

    // A form edit changes that field's line only; tabs and comments stay.
    FieldEditor* classes = editor.form()->editor(u"data_config.num_classes"_qs);
    QCOMPARE(classes->literal(), u"91"_qs);
    auto* spin = qobject_cast<QSpinBox*>(classes->input());
    spin->setValue(2);
    QVERIFY(editor.isModified());
    QVERIFY(editor.saveAs(copy));
    QVERIFY(!editor.isModified());
    QCOMPARE(changedLines(QString::fromUtf8(readFile(source)), QString::fromUtf8(readFile(copy))),
             QStringList{u"\tnum_classes: 2"_qs} << u"\tnum_classes: 91"_qs.prepend(u'-'));
  }

  // The system switches to a dark palette: the syntax colours follow, and read on it.
  void followsTheDarkPalette() {
    SpecEditor editor;
    editor.setText(u"seed: 1\n"_qs);
    const QPalette light = QApplication::palette();
    QPalette dark = light;
    dark.setColor(QPalette::Base, QColor(0x1e, 0x1e, 0x1e));
    dark.setColor(QPalette::Text, QColor(0xdd, 0xdd, 0xdd));
    dark.setColor(QPalette::Window, QColor(0x2a, 0x2a, 0x2a));
    const auto field_lightness = [&] {
      return editor.highlighter()
          ->roleFormat(SpecHighlighter::Role::FieldName)
          .foreground()
          .color()
          .lightness();
    };
    QVERIFY(field_lightness() < 128);  // dark ink on the light base
    QApplication::setPalette(dark);
    QCoreApplication::processEvents();
    QVERIFY(field_lightness() > 128);  // light ink on the dark base
    QApplication::setPalette(light);
    QCoreApplication::processEvents();
    QVERIFY(field_lightness() < 128);
  }

  // The spec changes on disk while open here: reloaded when there are no edits here (one
  // undo step), kept and said so when there are; deleted: said so, Save writes it again.
  void specChangedOnDiskWhileEdited() {
    QTemporaryDir dir;
    const QString path = dir.filePath(u"spec.txt"_qs);
    const auto write = [&](const QByteArray& text) {
      QFile f(path);
      QVERIFY(f.open(QIODevice::WriteOnly | QIODevice::Truncate));
      f.write(text);
    };
    write("total_steps: 10\n");
    SpecEditor editor;
    QVERIFY(editor.openFile(path));
    QVERIFY(editor.diskNotice().isEmpty());

    write("total_steps: 20\n");  // another program, no edits here
    QTRY_COMPARE_WITH_TIMEOUT(editor.text(), u"total_steps: 20\n"_qs, 5000);
    QVERIFY2(editor.diskNotice().contains(u"changed on disk: reloaded"_qs),
             qPrintable(editor.diskNotice()));
    QVERIFY(!editor.isModified());
    editor.undo();
    QCOMPARE(editor.text(), u"total_steps: 10\n"_qs);
    editor.redo();

    editor.setText(u"total_steps: 30\n"_qs);  // edits here, then the file changes again
    write("total_steps: 40\n");
    QTRY_VERIFY_WITH_TIMEOUT(editor.diskNotice().contains(u"edits here are kept"_qs), 5000);
    QCOMPARE(editor.text(), u"total_steps: 30\n"_qs);
    QVERIFY(editor.isModified());

    QVERIFY(QFile::remove(path));
    QTRY_VERIFY_WITH_TIMEOUT(editor.diskNotice().contains(u"deleted or moved on disk"_qs), 5000);
    QCOMPARE(editor.text(), u"total_steps: 30\n"_qs);
    QVERIFY(editor.save());
    QVERIFY(editor.diskNotice().isEmpty());
    QFile f(path);
    QVERIFY(f.open(QIODevice::ReadOnly));
    QCOMPARE(f.readAll(), QByteArray("total_steps: 30\n"));
    QTest::qWait(400);  // our own save is not a change on disk
    QVERIFY(editor.diskNotice().isEmpty());
  }

  void openReportsAMissingFile() {
    SpecEditor editor;
    QString error;
    QVERIFY(!editor.openFile(u"/nonexistent/spec.txt"_qs, &error));
    QVERIFY(error.startsWith(u"/nonexistent/spec.txt: "_qs));
  }

  void runSavesFirstAndRefusesErrors() {
    QTemporaryDir dir;
    const QString path = dir.filePath(u"spec.txt"_qs);
    QVERIFY(QFile::copy(sourcePath(u"specs/shapes_resnet18.txt"_qs), path));
    SpecEditor editor;
    QVERIFY(editor.openFile(path));
    QSignalSpy runs(&editor, &SpecEditor::runRequested);
    editor.setTask(u"evaluate"_qs);
    qobject_cast<QSpinBox*>(editor.form()->editor(u"total_steps"_qs)->input())->setValue(10);
    QVERIFY(editor.requestRun());
    QCOMPARE(runs.size(), 1);
    QCOMPARE(runs[0][0].toString(), QFileInfo(path).absoluteFilePath());
    QCOMPARE(runs[0][1].toString(), u"evaluate"_qs);
    QVERIFY(readFile(path).contains("total_steps: 10\n"));
    QVERIFY(!editor.isModified());

    // Every task of the engine is offered, export included.
    editor.setTask(u"export"_qs);
    QVERIFY(editor.requestRun());
    QCOMPARE(runs.size(), 2);
    QCOMPARE(runs[1][1].toString(), u"export"_qs);

    editor.setText(editor.text() + u"nlayers: 3\n"_qs);
    QVERIFY(!editor.requestRun());
    QCOMPARE(runs.size(), 2);
  }
};

QTEST_MAIN(SpecEditorTest)
#include "test_spec_editor.moc"
