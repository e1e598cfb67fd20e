// PgOutputDecoder with binary transfer (`binary 'true'`): values in their
// send format become the columns text mode gives, and a dead letter carries
// the text-mode form. Text-mode messages are pgoutput_decoder_test.cc's;
// each type's conversion is pgoutput_binary_test.cc's.
#include <string>

#include "absl/status/status.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "plugin/pgoutput/pgoutput_decoder.h"
#include "plugin/pgoutput/pgoutput_test_util.h"

namespace outbox {
namespace {

using ::outbox::testing::PgMessage;

PgMessage Binary(absl::string_view raw) {
  PgMessage m('b');
  m.U32(static_cast<uint32_t>(raw.size()));
  return m.Raw(raw);
}

TEST(PgOutputBinaryDecoderTest, BinaryValuesBecomeTheirTextModeColumns) {
  PgOutputDecoder decoder(/*binary=*/true);
  Change c;
  ASSERT_TRUE(decoder
                  .Decode(PgMessage('R')
                              .U32(9)
                              .Str("public")
                              .Str("t")
                              .U8('d')
                              .U16(7)
                              .U8(0)
                              .Str("n")
                              .U32(1700)
                              .U32(0xFFFFFFFF)
                              .U8(0)
                              .Str("f")
                              .U32(701)
                              .U32(0xFFFFFFFF)
                              .U8(0)
                              .Str("i")
                              .U32(23)
                              .U32(0xFFFFFFFF)
                              .U8(0)
                              .Str("b")
                              .U32(16)
                              .U32(0xFFFFFFFF)
                              .U8(0)
                              .Str("by")
                              .U32(17)
                              .U32(0xFFFFFFFF)
                              .U8(0)
                              .Str("j")
                              .U32(3802)
                              .U32(0xFFFFFFFF)
                              .U8(0)
                              .Str("t")
                              .U32(25)
                              .U32(0xFFFFFFFF),
                          &c)
                  .ok());
  // numeric NaN, then a numeric with a display scale long enough to make
  // the decoder's text buffer grow past the earlier values.
  std::string nan("\0\0\0\0\xC0\0\0\0", 8);
  std::string tiny("\0\x01\xfc\x18\0\0\x0f\xa0\0\x01", 10);  // 1e-4000
  std::string f8("\x3f\xb9\x99\x99\x99\x99\x99\x9a", 8);     // 0.1
  std::string i4("\xff\xff\xff\xfe", 4);                     // -2
  for (const std::string& n : {nan, tiny}) {
    absl::Status s = decoder.Decode(PgMessage('I')
                                        .U32(9)
                                        .U8('N')
                                        .U16(7)
                                        .Raw(Binary(n))
                                        .Raw(Binary(f8))
                                        .Raw(Binary(i4))
                                        .Raw(Binary(std::string(1, '\1')))
                                        .Raw(Binary(std::string("\0\xff", 2)))
                                        .Raw(Binary("\x01{\"a\": 1}"))
                                        .Text("text"),
                                    &c);
    ASSERT_TRUE(s.ok()) << s;
    ASSERT_EQ(c.columns.size(), 7u);
    if (n == nan) {
      EXPECT_EQ(c.columns[0].kind, ValueKind::kNull);
      EXPECT_EQ(c.columns[0].value, "");
    } else {
      EXPECT_EQ(c.columns[0].kind, ValueKind::kNumber);
      EXPECT_EQ(c.columns[0].value,
                "0." + std::string(4000, '0').substr(1) + "1");
    }
    EXPECT_EQ(c.columns[1].kind, ValueKind::kNumber);
    EXPECT_EQ(c.columns[1].value, "0.1");
    EXPECT_EQ(c.columns[2].kind, ValueKind::kNumber);
    EXPECT_EQ(c.columns[2].value, "-2");
    EXPECT_EQ(c.columns[3].kind, ValueKind::kBool);
    EXPECT_EQ(c.columns[3].value, "true");
    EXPECT_EQ(c.columns[4].kind, ValueKind::kBytes);
    EXPECT_EQ(c.columns[4].value, std::string("\0\xff", 2));
    EXPECT_EQ(c.columns[5].kind, ValueKind::kText);
    EXPECT_EQ(c.columns[5].value, "{\"a\": 1}");
    EXPECT_EQ(c.columns[6].value, "text");
  }
}

// A dead letter carries the row as text mode sends it: a binary Insert
// (uuid, float8, bytea, bool, NULL, a text value) becomes the very bytes
// the walsender sends without binary 'true'.
TEST(PgOutputBinaryDecoderTest, DeadLetterFormIsTheTextModeMessage) {
  const PgMessage relation = PgMessage('R')
                                 .U32(9)
                                 .Str("public")
                                 .Str("t")
                                 .U8('d')
                                 .U16(6)
                                 .U8(1)
                                 .Str("id")
                                 .U32(2950)
                                 .U32(0xFFFFFFFF)
                                 .U8(0)
                                 .Str("f")
                                 .U32(701)
                                 .U32(0xFFFFFFFF)
                                 .U8(0)
                                 .Str("by")
                                 .U32(17)
                                 .U32(0xFFFFFFFF)
                                 .U8(0)
                                 .Str("b")
                                 .U32(16)
                                 .U32(0xFFFFFFFF)
                                 .U8(0)
                                 .Str("n")
                                 .U32(25)
                                 .U32(0xFFFFFFFF)
                                 .U8(0)
                                 .Str("t")
                                 .U32(25)
                                 .U32(0xFFFFFFFF);
  const std::string uuid(
      "\x01\x23\x45\x67\x89\xab\xcd\xef\x01\x23\x45\x67\x89\xab\xcd\xef", 16);
  const std::string binary =
      PgMessage('I')
          .U32(9)
          .U8('N')
          .U16(6)
          .Raw(Binary(uuid))
          .Raw(Binary(std::string("\x3f\xd3\x33\x33\x33\x33\x33\x33", 8)))
          .Raw(Binary(std::string("\0\xff", 2)))
          .Raw(Binary(std::string(1, '\0')))
          .Null()
          .Text("Zoë")
          .str();
  const std::string text = PgMessage('I')
                               .U32(9)
                               .U8('N')
                               .U16(6)
                               .Text("01234567-89ab-cdef-0123-456789abcdef")
                               .Text("0.3")
                               .Text("\\x00ff")
                               .Text("f")
                               .Null()
                               .Text("Zoë")
                               .str();
  PgOutputDecoder decoder(/*binary=*/true);
  Change c;
  ASSERT_TRUE(decoder.Decode(relation, &c).ok());
  ASSERT_TRUE(decoder.Decode(binary, &c).ok());
  EXPECT_EQ(absl::CEscape(decoder.DeadLetterForm(binary)), absl::CEscape(text));
  // The Change it decoded stays valid.
  EXPECT_EQ(c.columns[0].value, "01234567-89ab-cdef-0123-456789abcdef");
  // An Update's old key and new row alike.
  const std::string old_key = PgMessage('K')
                                  .U16(6)
                                  .Raw(Binary(uuid))
                                  .Null()
                                  .Null()
                                  .Null()
                                  .Null()
                                  .Null()
                                  .str();
  std::string update =
      absl::StrCat("U", binary.substr(1, 4), old_key, binary.substr(5));
  std::string update_text =
      absl::StrCat("U", text.substr(1, 4),
                   PgMessage('K')
                       .U16(6)
                       .Text("01234567-89ab-cdef-0123-456789abcdef")
                       .Null()
                       .Null()
                       .Null()
                       .Null()
                       .Null()
                       .str(),
                   text.substr(5));
  EXPECT_EQ(absl::CEscape(decoder.DeadLetterForm(update)),
            absl::CEscape(update_text));
  // Text mode, and what it cannot read, as is.
  PgOutputDecoder text_decoder;
  ASSERT_TRUE(text_decoder.Decode(relation, &c).ok());
  ASSERT_TRUE(text_decoder.Decode(text, &c).ok());
  EXPECT_EQ(text_decoder.DeadLetterForm(text), text);
  const std::string cut = binary.substr(0, binary.size() - 3);
  EXPECT_EQ(decoder.DeadLetterForm(cut), cut);
  EXPECT_EQ(decoder.DeadLetterForm("M"), "M");
}

TEST(PgOutputBinaryDecoderTest, ARelationWithATypeItCannotFormatIsRefused) {
  PgOutputDecoder::Unformattable refused;
  PgOutputDecoder decoder(/*binary=*/true, &refused);
  Change c;
  const PgMessage type = PgMessage('Y').U32(16400).Str("").Str("mood");
  const PgMessage relation = PgMessage('R')
                                 .U32(9)
                                 .Str("public")
                                 .Str("t")
                                 .U8('d')
                                 .U16(2)
                                 .U8(0)
                                 .Str("id")
                                 .U32(23)
                                 .U32(0xFFFFFFFF)
                                 .U8(0)
                                 .Str("m")
                                 .U32(16400)
                                 .U32(0xFFFFFFFF);
  ASSERT_TRUE(decoder.Decode(type, &c).ok());
  absl::Status s = decoder.Decode(relation, &c);
  EXPECT_TRUE(absl::IsInvalidArgument(s)) << s;
  EXPECT_THAT(s.message(),
              ::testing::HasSubstr("column \"m\" of public.t has type mood"));
  EXPECT_EQ(refused.table, "public.t");
  EXPECT_EQ(refused.column, "m");
  EXPECT_EQ(refused.type, "mood");
  // In text, the same relation is fine.
  PgOutputDecoder text;
  ASSERT_TRUE(text.Decode(type, &c).ok());
  EXPECT_TRUE(text.Decode(relation, &c).ok());
}

}  // namespace
}  // namespace outbox
