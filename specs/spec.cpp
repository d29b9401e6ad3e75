#include "specs/spec.h"

#include <google/protobuf/descriptor.h>
#include <google/protobuf/io/tokenizer.h>
#include <google/protobuf/text_format.h>

#include <algorithm>
#include <fstream>
#include <regex>
#include <sstream>

#include "specs/options.pb.h"
#include "specs/spec_internal.h"
#include "specs/spec_tokens.h"

namespace mrcnn::spec {

namespace gp = google::protobuf;
using internal::classify;
using internal::describeError;
using internal::FieldLocation;
using internal::joinPath;
using internal::LocationMap;
using internal::quotedToken;
using internal::typeName;
using internal::unknownFieldMessage;

std::string Diagnostic::format() const {
  std::ostringstream os;
  os << origin;
  if (line > 0) {
    os << ':' << line;
    if (column > 0) os << ':' << column;
  }
  os << (isError() ? ": error: " : ": warning: ");
  if (!field.empty()) os << field << ": ";
  os << message;
  return os.str();
}

bool LoadedSpec::ok() const {
  return std::none_of(diagnostics.begin(), diagnostics.end(),
                      [](const Diagnostic& d) { return d.isError(); });
}

void LoadedSpec::dropTrainingRequirements() {
  diagnostics.erase(std::remove_if(diagnostics.begin(), diagnostics.end(),
                                   [](const Diagnostic& d) { return d.training_only; }),
                    diagnostics.end());
}

std::vector<Diagnostic> LoadedSpec::errors() const {
  std::vector<Diagnostic> out;
  for (const auto& d : diagnostics) {
    if (d.isError()) out.push_back(d);
  }
  return out;
}

std::vector<Diagnostic> LoadedSpec::warnings() const {
  std::vector<Diagnostic> out;
  for (const auto& d : diagnostics) {
    if (!d.isError()) out.push_back(d);
  }
  return out;
}

namespace {

// ---------------------------------------------------------------------------------------
// Over the tokens (spec_tokens.h): the statement an error sits in, the blocks around it.

bool isSymbol(const std::vector<Token>& t, std::size_t i, char c) {
  return i < t.size() && t[i].isSymbol(c);
}

bool opensBlock(const std::vector<Token>& t, std::size_t i) {
  return isSymbol(t, i, '{') || isSymbol(t, i, '<');
}

bool closesBlock(const std::vector<Token>& t, std::size_t i) {
  return isSymbol(t, i, '}') || isSymbol(t, i, '>');
}

// Index just past the bracket matching the one at `open`.
std::size_t skipBracketed(const std::vector<Token>& t, std::size_t open) {
  int depth = 0;
  for (std::size_t i = open; i < t.size(); ++i) {
    if (t[i].kind != Token::Kind::Symbol) continue;
    const char c = t[i].text[0];
    if (c == '{' || c == '<' || c == '[') ++depth;
    if (c == '}' || c == '>' || c == ']') {
      if (--depth == 0) return i + 1;
    }
  }
  return t.size();
}

// The statement (`name: value`, `name { ... }`) around token `i`, as a token range.
std::pair<std::size_t, std::size_t> statementAround(const std::vector<Token>& t, std::size_t i) {
  std::size_t start = i;
  const auto is_name_at = [&](std::size_t k) {
    return k < t.size() && t[k].kind == Token::Kind::Identifier &&
           (isSymbol(t, k + 1, ':') || opensBlock(t, k + 1));
  };
  if (is_name_at(i)) {
    start = i;
  } else if (i >= 2 && isSymbol(t, i - 1, ':') && t[i - 2].kind == Token::Kind::Identifier) {
    start = i - 2;
  } else if (i >= 1 && t[i - 1].kind == Token::Kind::Identifier && !closesBlock(t, i)) {
    start = i - 1;  // `name value` with the colon missing
  }
  std::size_t end = start;
  if (end < t.size() && t[end].kind == Token::Kind::Identifier && !closesBlock(t, end)) {
    ++end;
    if (isSymbol(t, end, ':')) ++end;
  }
  if (end < t.size()) {
    if (opensBlock(t, end) || isSymbol(t, end, '[')) {
      end = skipBracketed(t, end);
    } else if (end == start || !closesBlock(t, end)) {
      ++end;
      while (end < t.size() && t[end].kind == Token::Kind::String &&
             t[end - 1].kind == Token::Kind::String) {
        ++end;  // adjacent strings concatenate
      }
    }
  }
  if (isSymbol(t, end, ';') || isSymbol(t, end, ',')) ++end;
  return {start, std::max(end, start + 1)};
}

// Names of the blocks enclosing token `i`, outermost first.
std::vector<std::string> blocksAround(const std::vector<Token>& t, std::size_t i) {
  std::vector<std::string> path;
  for (std::size_t k = 0; k < i && k < t.size(); ++k) {
    if (opensBlock(t, k)) {
      std::size_t name = k;
      if (name > 0 && isSymbol(t, name - 1, ':')) --name;
      path.push_back(name > 0 && t[name - 1].kind == Token::Kind::Identifier
                         ? std::string(t[name - 1].text)
                         : std::string("?"));
    } else if (closesBlock(t, k) && !path.empty()) {
      path.pop_back();
    }
  }
  return path;
}

// Blocks still open at the end of the text: (dotted name, index of the name token).
std::vector<std::pair<std::string, std::size_t>> openBlocks(const std::vector<Token>& t) {
  std::vector<std::pair<std::string, std::size_t>> open;
  for (std::size_t k = 0; k < t.size(); ++k) {
    if (opensBlock(t, k)) {
      std::size_t name = k;
      if (name > 0 && isSymbol(t, name - 1, ':')) --name;
      name = name > 0 ? name - 1 : 0;
      const std::string label = open.empty() ? std::string(t[name].text)
                                             : open.back().first + "." + std::string(t[name].text);
      open.emplace_back(label, name);
    } else if (closesBlock(t, k) && !open.empty()) {
      open.pop_back();
    }
  }
  return open;
}

// ---------------------------------------------------------------------------------------
// Positions: protobuf reports 0-based lines and columns where a tab advances to the next
// multiple of 8; we report 1-based byte columns, as compilers and editors do.

class LineIndex {
 public:
  explicit LineIndex(std::string_view text) : text_(text) {
    starts_.push_back(0);
    for (std::size_t i = 0; i < text.size(); ++i) {
      if (text[i] == '\n') starts_.push_back(i + 1);
    }
  }

  std::size_t offsetOf(int pb_line, int pb_column) const {
    if (pb_line < 0) return 0;
    if (static_cast<std::size_t>(pb_line) >= starts_.size()) return text_.size();
    std::size_t offset = starts_[static_cast<std::size_t>(pb_line)];
    int column = 0;
    while (offset < text_.size() && text_[offset] != '\n' && column < pb_column) {
      column = text_[offset] == '\t' ? column + 8 - column % 8 : column + 1;
      ++offset;
    }
    return offset;
  }

  // 1-based line and byte column.
  std::pair<int, int> lineColumn(std::size_t offset) const {
    const auto it = std::upper_bound(starts_.begin(), starts_.end(), offset);
    const auto line = static_cast<std::size_t>(it - starts_.begin()) - 1;
    return {static_cast<int>(line) + 1, static_cast<int>(offset - starts_[line]) + 1};
  }

 private:
  std::string_view text_;
  std::vector<std::size_t> starts_;
};

class FirstError : public gp::io::ErrorCollector {
 public:
  void AddError(int line, gp::io::ColumnNumber column, const std::string& message) override {
    if (!has_) {
      has_ = true;
      line_ = line;
      column_ = column;
      message_ = message;
    }
  }
  void AddWarning(int, gp::io::ColumnNumber, const std::string&) override {}

  bool has_ = false;
  int line_ = 0;
  int column_ = 0;
  std::string message_;
};

void collectLocations(const gp::Message& message, const gp::TextFormat::ParseInfoTree& tree,
                      const std::string& prefix, const LineIndex& lines, std::string_view text,
                      const std::string& origin, LocationMap* out) {
  const gp::Reflection* reflection = message.GetReflection();
  std::vector<const gp::FieldDescriptor*> fields;
  reflection->ListFields(message, &fields);
  for (const gp::FieldDescriptor* field : fields) {
    if (field->is_repeated()) continue;
    const auto where = tree.GetLocation(field, -1);
    if (where.line < 0) continue;
    const std::string path = prefix.empty() ? field->name() : prefix + "." + field->name();
    FieldLocation location;
    location.origin = origin;
    const std::size_t offset = lines.offsetOf(where.line, where.column);
    std::tie(location.line, location.column) = lines.lineColumn(offset);
    if (field->cpp_type() == gp::FieldDescriptor::CPPTYPE_STRING) {
      // The value is the first string token after the name and the colon.
      const auto tokens =
          tokenize(text.substr(offset, std::min<std::size_t>(text.size() - offset, 4096)));
      for (const Token& t : tokens) {
        if (t.kind == Token::Kind::String) {
          location.value_column = lines.lineColumn(offset + t.begin + 1).second;
          break;
        }
      }
    }
    out->fields[path] = location;
    if (field->cpp_type() == gp::FieldDescriptor::CPPTYPE_MESSAGE) {
      if (const auto* nested = tree.GetTreeForNested(field, -1)) {
        collectLocations(reflection->GetMessage(message, field), *nested, path, lines, text, origin,
                         out);
      }
    }
  }
}

// Parses as much of `text` as is valid: on each error the statement holding it is blanked
// out (keeping every other position) and the rest parsed again, so that every independent
// error of the file is reported, not only the first.
constexpr std::size_t kMaxParseErrors = 50;

void parseAll(std::string text, const std::string& origin, Experiment* spec, LocationMap* locations,
              std::vector<Diagnostic>* out) {
  std::size_t last_error_offset = 0;
  bool first = true;
  bool closed_at_end = false;
  const std::size_t reported_before = out->size();
  for (int attempt = 0; attempt < 256; ++attempt) {
    // Each error costs a parse of the whole text: a text that is mostly errors (a binary
    // file, another format) stops here, like a compiler's error limit.
    if (out->size() - reported_before >= kMaxParseErrors) {
      Diagnostic d;
      d.kind = Diagnostic::Kind::Syntax;
      d.origin = origin;
      d.message = "too many errors: the first " + std::to_string(kMaxParseErrors) +
                  " are shown; is this a spec (protobuf text)?";
      out->push_back(d);
      spec->Clear();
      return;
    }
    FirstError collector;
    gp::TextFormat::ParseInfoTree tree;
    gp::TextFormat::Parser parser;
    parser.RecordErrorsTo(&collector);
    parser.WriteLocationsTo(&tree);
    spec->Clear();
    const LineIndex lines(text);
    if (parser.ParseFromString(text, spec)) {
      collectLocations(*spec, tree, "", lines, text, origin, locations);
      return;
    }
    const std::size_t offset = lines.offsetOf(collector.line_, collector.column_);
    const auto tokens = tokenize(text);
    std::size_t at = 0;
    while (at < tokens.size() && tokens[at].end <= offset)
      ++at;
    const Diagnostic::Kind kind = classify(collector.message_);
    // protobuf reports some errors after the token at fault (past an unknown name, past a
    // bad value); step back to the token the message quotes.
    bool at_quoted = false;
    if (const std::string quoted = quotedToken(collector.message_); !quoted.empty()) {
      for (std::size_t k = std::min(at, tokens.size() - 1) + 1, steps = 0; k-- > 0 && steps < 4;
           ++steps) {
        if (tokens[k].text == quoted || tokens[k].text == "\"" + quoted + "\"") {
          at = k;
          at_quoted = true;
          break;
        }
      }
    }

    Diagnostic d;
    d.kind = kind;
    d.origin = origin;
    std::tie(d.line, d.column) = lines.lineColumn(offset);
    if (at >= tokens.size()) {
      // The error is at the end of the text: blocks left open. Report the innermost, close
      // them all, and parse again for the errors inside.
      const auto open = openBlocks(tokens);
      if (open.empty() || closed_at_end) {
        d.message = describeError(kind, collector.message_, {}, {}, {});
        out->push_back(d);
        return;
      }
      const auto [where_line, where_column] = lines.lineColumn(tokens[open.back().second].begin);
      d.line = where_line;
      d.column = where_column;
      d.field = open.back().first;
      d.kind = Diagnostic::Kind::Syntax;
      d.message = "block opened here is never closed: a '}' is missing";
      out->push_back(d);
      text.append(open.size(), '}');
      closed_at_end = true;
      continue;
    }
    if (kind != Diagnostic::Kind::Syntax || at_quoted) {
      std::tie(d.line, d.column) = lines.lineColumn(tokens[at].begin);
    }
    const auto [begin, end] = statementAround(tokens, at);
    const auto blocks = blocksAround(tokens, begin);
    const std::string_view name =
        tokens[begin].kind == Token::Kind::Identifier ? tokens[begin].text : std::string_view{};
    const std::string_view found = tokens[at].text;
    d.field = joinPath(blocks, name);
    d.message = describeError(kind, collector.message_, name, blocks, found);
    if (!first && offset < last_error_offset) {
      // Parsing went backwards: the text is too broken to go on without inventing errors.
      spec->Clear();
      return;
    }
    out->push_back(d);
    locations->unusable.insert(d.field);
    if (const auto hint = d.message.find("did you mean \""); hint != std::string::npos) {
      // The field meant is absent: rules about it would only repeat this error.
      const auto begin_name = hint + 14;
      const std::string meant =
          d.message.substr(begin_name, d.message.find('"', begin_name) - begin_name);
      locations->unusable.insert(joinPath(blocks, meant));
    }
    first = false;
    last_error_offset = offset;
    for (std::size_t i = tokens[begin].begin; i < tokens[end - 1].end; ++i) {
      if (text[i] != '\n') text[i] = ' ';
    }
  }
}

// ---------------------------------------------------------------------------------------
// --set path.to.field=value

void applyOverride(const std::string& assignment, Experiment* spec, LocationMap* locations,
                   std::vector<Diagnostic>* out) {
  const std::string origin = "--set " + assignment;
  const auto fail = [&](const std::string& field, const std::string& message) {
    Diagnostic d;
    d.kind = Diagnostic::Kind::Type;
    d.origin = origin;
    d.field = field;
    d.message = message;
    out->push_back(d);
    locations->unusable.insert(field);
  };
  const std::size_t eq = assignment.find('=');
  if (eq == std::string::npos || eq == 0) {
    fail("", "expected path.to.field=value");
    return;
  }
  const std::string path = assignment.substr(0, eq);
  std::string value = assignment.substr(eq + 1);

  gp::Message* message = spec;
  std::vector<std::string> blocks;
  std::size_t start = 0;
  while (true) {
    const std::size_t dot = path.find('.', start);
    const std::string name = path.substr(start, dot == std::string::npos ? dot : dot - start);
    const gp::FieldDescriptor* field = message->GetDescriptor()->FindFieldByName(name);
    if (!field) {
      fail(path, unknownFieldMessage(name, blocks));
      return;
    }
    if (dot == std::string::npos) {
      if (field->cpp_type() == gp::FieldDescriptor::CPPTYPE_MESSAGE) {
        fail(path, "is a block; set one of its fields, e.g. " + path + "." +
                       field->message_type()->field(0)->name() + "=...");
        return;
      }
      if (field->is_repeated()) {
        fail(path, "is a list; it cannot be set from the command line");
        return;
      }
      if (field->cpp_type() == gp::FieldDescriptor::CPPTYPE_STRING &&
          (value.empty() || (value.front() != '"' && value.front() != '\''))) {
        message->GetReflection()->SetString(message, field, value);
      } else {
        message->GetReflection()->ClearField(message, field);
        FirstError quiet;  // keeps protobuf from logging; the failure is reported below
        gp::TextFormat::Parser parser;
        parser.RecordErrorsTo(&quiet);
        if (!parser.ParseFieldValueFromString(value, field, message)) {
          fail(path, "expected " + typeName(field) + ", found '" + value + "'");
          return;
        }
      }
      FieldLocation location;
      location.origin = origin;
      location.value_column = field->cpp_type() == gp::FieldDescriptor::CPPTYPE_STRING ? -1 : 0;
      locations->fields[path] = location;
      locations->unusable.erase(path);
      return;
    }
    if (field->cpp_type() != gp::FieldDescriptor::CPPTYPE_MESSAGE || field->is_repeated()) {
      fail(path, "\"" + name + "\" is not a block");
      return;
    }
    message = message->GetReflection()->MutableMessage(message, field);
    blocks.push_back(name);
    start = dot + 1;
  }
}

std::filesystem::path resolvePath(const std::filesystem::path& base, const std::string& value) {
  if (value.empty()) return {};
  std::filesystem::path p(value);
  if (p.is_relative()) p = base / p;
  return p.lexically_normal();
}

LoadedSpec finish(LoadedSpec loaded, LocationMap& locations, const std::filesystem::path& spec_dir,
                  const std::string& default_run_name, const std::vector<std::string>& overrides) {
  for (const auto& assignment : overrides) {
    applyOverride(assignment, &loaded.spec, &locations, &loaded.diagnostics);
  }
  Resolved& r = loaded.resolved;
  r.spec_dir = spec_dir;
  internal::validate(loaded.spec, locations, &r, &loaded.diagnostics);

  const Experiment& s = loaded.spec;
  const DataConfig& data = s.data_config();
  r.output_dir = resolvePath(spec_dir, s.output_dir());
  r.run_name = s.run_name().empty() ? default_run_name : s.run_name();
  r.train_image_dir = resolvePath(spec_dir, data.train_image_dir());
  r.train_json_file = resolvePath(spec_dir, data.train_json_file());
  r.val_image_dir = resolvePath(spec_dir, data.val_image_dir());
  r.val_json_file = resolvePath(spec_dir, data.val_json_file());
  if (data.has_shapes_dataset())
    r.shapes_root = resolvePath(spec_dir, data.shapes_dataset().root());
  std::stable_sort(loaded.diagnostics.begin(), loaded.diagnostics.end(),
                   [](const Diagnostic& a, const Diagnostic& b) {
                     const bool a_file = a.line > 0, b_file = b.line > 0;
                     if (a_file != b_file) return a_file;
                     return a.line != b.line ? a.line < b.line : a.column < b.column;
                   });
  return loaded;
}

}  // namespace

LoadedSpec loadSpecText(std::string_view text, const std::string& origin,
                        const std::filesystem::path& spec_dir,
                        const std::vector<std::string>& overrides) {
  LoadedSpec loaded;
  LocationMap locations;
  locations.file_origin = origin;
  parseAll(std::string(text), origin, &loaded.spec, &locations, &loaded.diagnostics);
  const std::string stem = std::filesystem::path(origin).stem().string();
  return finish(std::move(loaded), locations, spec_dir, stem.empty() ? "run" : stem, overrides);
}

LoadedSpec loadSpecFile(const std::filesystem::path& path,
                        const std::vector<std::string>& overrides) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    LoadedSpec loaded;
    Diagnostic d;
    d.kind = Diagnostic::Kind::Io;
    d.origin = path.string();
    std::error_code ec;
    d.message = std::filesystem::exists(path, ec) ? "cannot read the spec file (permissions?)"
                                                  : "no such spec file";
    loaded.diagnostics.push_back(d);
    return loaded;
  }
  std::ostringstream buffer;
  buffer << in.rdbuf();
  const std::filesystem::path dir = std::filesystem::absolute(path).parent_path();
  return loadSpecText(buffer.str(), path.string(), dir, overrides);
}

}  // namespace mrcnn::spec
