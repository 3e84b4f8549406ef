#pragma once
// How a text file was written, so an editor that holds it as plain '\n' text (QTextDocument splits
// lines on "\r\n" and gives them back as '\n') saves it as it was: the line ending (a config from
// a Windows editor is CRLF), a UTF-8 byte order mark, and the final newline (the text keeps that
// one itself). Qt Creator's habit: the first line break decides, and saving keeps it.

#include <QByteArray>
#include <QString>

namespace shardscope::gui {

struct TextFileFormat {
  bool crlf = false;      ///< lines end in "\r\n" (else "\n")
  bool utf8_bom = false;  ///< the file starts with EF BB BF
  bool mixed = false;     ///< both endings were found; saving writes the first one's everywhere
};

/// The file's bytes as editor text ('\n' line ends, no BOM) and its format; false with `error`
/// naming the line and byte when the bytes are not UTF-8 (DeepSpeed opens configs as UTF-8, so
/// such a file would fail there too and would be corrupted by a save).
bool decode_text_file(const QByteArray& bytes, QString* text, TextFileFormat* format, QString* error);

/// Editor text back to the bytes of a file in `format`.
QByteArray encode_text_file(const QString& text, const TextFileFormat& format);

}  // namespace shardscope::gui
