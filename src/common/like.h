// SQL LIKE pattern matching: '%' any run, '_' any one character, '\' escapes.
// Case-insensitive for ASCII, as with MySQL's default collations.
#pragma once

#include <string_view>

namespace shale {

bool MatchLike(std::string_view text, std::string_view pattern);

}  // namespace shale
