// SQL LIKE pattern matching: '%' any run, '_' any one character, `escape`
// (one character, '\' by default, none when empty) makes the next pattern
// character literal.
// Case-insensitive for ASCII, as with MySQL's default collations, unless
// `case_sensitive` (the _bin and binary collations; callers fold text and
// pattern for the accent-insensitive collations, src/common/collation.h).
#pragma once

#include <string_view>

namespace shale {

bool MatchLike(std::string_view text, std::string_view pattern, bool case_sensitive = false,
               std::string_view escape = "\\");

}  // namespace shale
