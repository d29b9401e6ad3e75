#pragma once

#include <QObject>

class SpecTest : public QObject {
  Q_OBJECT
 private slots:
  void taoSampleParsesUnmodified();
  void everyTaoFieldHasTaosNameNumberAndType();
  void everyTaoFieldParses();
  void sampleSpecsAreValid();
  void shapesDatasetOptionsAreChecked();
  void maskHeadLayersResolve();
  void errorClasses_data();
  void errorClasses();
  void allErrorsReportedAtOnce();
  void tabColumnsAreByteColumns();
  void overridesApplyAndValidate();
  void overrideCanSupplyAMissingSetting();
  void resolvedSpecListsEveryFieldAndParsesBack();
  void relativePathsFollowTheSpecFile();
  void specAsRunKeepsItsPathsWhenMoved();
  void weightsNamesAreNotPaths();
  void missingFileIsAnError();
  void taoTrackingBlocksAreAcceptedWithAWarning();
};

class LiteralTest : public QObject {
  Q_OBJECT
 private slots:
  void decodesTaoLists();
  void rejectsMalformedWithOffset_data();
  void rejectsMalformedWithOffset();
};
