// Printing a spec with every default filled in: `--task validate`, the run directory's
// spec.txt, and the GUI's text view.
#include <google/protobuf/descriptor.h>
#include <google/protobuf/text_format.h>

#include <sstream>

#include "specs/spec.h"

namespace mrcnn::spec {
namespace {

namespace gp = google::protobuf;

// ---------------------------------------------------------------------------------------
// Printing

void fillMessageDefaults(gp::Message* message) {
  const gp::Reflection* reflection = message->GetReflection();
  const gp::Descriptor* d = message->GetDescriptor();
  for (int i = 0; i < d->field_count(); ++i) {
    const gp::FieldDescriptor* f = d->field(i);
    if (f->is_repeated() || reflection->HasField(*message, f) || !f->has_default_value()) continue;
    switch (f->cpp_type()) {
      case gp::FieldDescriptor::CPPTYPE_INT32:
        reflection->SetInt32(message, f, f->default_value_int32());
        break;
      case gp::FieldDescriptor::CPPTYPE_INT64:
        reflection->SetInt64(message, f, f->default_value_int64());
        break;
      case gp::FieldDescriptor::CPPTYPE_UINT32:
        reflection->SetUInt32(message, f, f->default_value_uint32());
        break;
      case gp::FieldDescriptor::CPPTYPE_UINT64:
        reflection->SetUInt64(message, f, f->default_value_uint64());
        break;
      case gp::FieldDescriptor::CPPTYPE_FLOAT:
        reflection->SetFloat(message, f, f->default_value_float());
        break;
      case gp::FieldDescriptor::CPPTYPE_DOUBLE:
        reflection->SetDouble(message, f, f->default_value_double());
        break;
      case gp::FieldDescriptor::CPPTYPE_BOOL:
        reflection->SetBool(message, f, f->default_value_bool());
        break;
      case gp::FieldDescriptor::CPPTYPE_STRING:
        reflection->SetString(message, f, f->default_value_string());
        break;
      case gp::FieldDescriptor::CPPTYPE_ENUM:
        reflection->SetEnum(message, f, f->default_value_enum());
        break;
      case gp::FieldDescriptor::CPPTYPE_MESSAGE:
        break;
    }
  }
}

void printMessage(const gp::Message& message, int indent, std::ostringstream& os) {
  const gp::Reflection* reflection = message.GetReflection();
  const gp::Descriptor* d = message.GetDescriptor();
  const std::string pad(static_cast<std::size_t>(indent) * 2, ' ');
  // Settings first, then blocks, each in declaration order.
  for (int i = 0; i < d->field_count(); ++i) {
    const gp::FieldDescriptor* f = d->field(i);
    if (f->cpp_type() == gp::FieldDescriptor::CPPTYPE_MESSAGE) continue;
    if (f->is_repeated()) {
      for (int k = 0; k < reflection->FieldSize(message, f); ++k) {
        std::string value;
        gp::TextFormat::PrintFieldValueToString(message, f, k, &value);
        os << pad << f->name() << ": " << value << '\n';
      }
      continue;
    }
    const bool present = reflection->HasField(message, f);
    if (!present && !f->has_default_value()) {
      os << pad << "# " << f->name() << ": (not set)\n";
      continue;
    }
    std::string value;
    gp::TextFormat::PrintFieldValueToString(message, f, -1, &value);
    os << pad << f->name() << ": " << value << (present ? "" : "  # default") << '\n';
  }
  for (int i = 0; i < d->field_count(); ++i) {
    const gp::FieldDescriptor* f = d->field(i);
    if (f->cpp_type() != gp::FieldDescriptor::CPPTYPE_MESSAGE || f->is_repeated() ||
        !reflection->HasField(message, f)) {
      continue;
    }
    os << pad << f->name() << " {\n";
    printMessage(reflection->GetMessage(message, f), indent + 1, os);
    os << pad << "}\n";
  }
}

}  // namespace

void fillDefaults(Experiment* spec) {
  fillMessageDefaults(spec);
  fillMessageDefaults(spec->mutable_data_config());
  fillMessageDefaults(spec->mutable_maskrcnn_config());
  if (spec->data_config().has_shapes_dataset()) {
    fillMessageDefaults(spec->mutable_data_config()->mutable_shapes_dataset());
  }
}

std::string printResolved(const Experiment& spec) {
  Experiment copy = spec;
  // Make both main blocks present so that their defaults are listed.
  copy.mutable_data_config();
  copy.mutable_maskrcnn_config();
  std::ostringstream os;
  printMessage(copy, 0, os);
  return os.str();
}

}  // namespace mrcnn::spec
