// The sections the spec form groups a block's fields into ("Learning rate", "Anchors", ...):
// what a person looks for, rather than the proto's order. A field the table does not name is
// in "Other", so a field added to the schema always shows.
#pragma once

#include <QString>
#include <QStringList>

namespace mrcnn::ui {

// The section of a field by dotted path ("init_learning_rate" → "Learning rate"); empty for
// a field of a block without sections (shapes_dataset, the TAO tracking blocks).
QString formSectionOf(const QString& path);
// The sections of a block ("" the top level, "data_config", "maskrcnn_config") in the order
// the form shows them, "Other" last; empty for a block without sections.
QStringList formSectionsOf(const QString& block);

}  // namespace mrcnn::ui
