#include "app/gui/common/text_file_format.hpp"

#include <QObject>

namespace shardscope::gui {
namespace {

const QByteArray kUtf8Bom("\xEF\xBB\xBF");

/// The offset of the first byte that is not part of well-formed UTF-8 (RFC 3629: no overlong
/// forms, no surrogates, nothing past U+10FFFF), or -1.
qsizetype first_invalid_utf8(const QByteArray& bytes) {
  const auto at = [&](qsizetype i) { return static_cast<unsigned char>(bytes[i]); };
  for (qsizetype i = 0; i < bytes.size();) {
    const unsigned char c = at(i);
    const int length = c < 0x80 ? 1 : (c >= 0xC2 && c <= 0xDF) ? 2 : (c >= 0xE0 && c <= 0xEF) ? 3 : (c >= 0xF0 && c <= 0xF4) ? 4 : 0;
    if (length == 0 || i + length > bytes.size()) return i;
    // The second byte's range excludes overlong forms (E0, F0), surrogates (ED) and > U+10FFFF (F4).
    const unsigned char low = c == 0xE0 ? 0xA0 : c == 0xF0 ? 0x90 : 0x80;
    const unsigned char high = c == 0xED ? 0x9F : c == 0xF4 ? 0x8F : 0xBF;
    for (int k = 1; k < length; ++k) {
      const unsigned char b = at(i + k);
      if (k == 1 ? (b < low || b > high) : (b & 0xC0) != 0x80) return i;
    }
    i += length;
  }
  return -1;
}

}  // namespace

bool decode_text_file(const QByteArray& bytes, QString* text, TextFileFormat* format, QString* error) {
  TextFileFormat f;
  QByteArray body = bytes;
  if (body.startsWith(kUtf8Bom)) {
    f.utf8_bom = true;
    body.remove(0, kUtf8Bom.size());
  }
  if (const qsizetype bad = first_invalid_utf8(body); bad >= 0) {
    if (error)
      *error = QObject::tr("not UTF-8 at line %1, byte %2 (0x%3): DeepSpeed reads configs as UTF-8; save the file as UTF-8")
                   .arg(body.left(bad).count('\n') + 1)
                   .arg(bad + 1 + (f.utf8_bom ? kUtf8Bom.size() : 0))
                   .arg(static_cast<unsigned char>(body[bad]), 2, 16, QChar('0'));
    return false;
  }
  QString decoded = QString::fromUtf8(body);
  const qsizetype first_break = decoded.indexOf('\n');
  f.crlf = first_break > 0 && decoded[first_break - 1] == '\r';
  const qsizetype crlf_count = decoded.count(QLatin1String("\r\n"));
  const qsizetype lf_count = decoded.count('\n');
  f.mixed = crlf_count > 0 && crlf_count < lf_count;
  decoded.replace(QLatin1String("\r\n"), QLatin1String("\n"));
  *text = decoded;
  *format = f;
  return true;
}

QByteArray encode_text_file(const QString& text, const TextFileFormat& format) {
  QString out = text;
  if (format.crlf) out.replace('\n', QLatin1String("\r\n"));
  return (format.utf8_bom ? kUtf8Bom : QByteArray()) + out.toUtf8();
}

}  // namespace shardscope::gui
