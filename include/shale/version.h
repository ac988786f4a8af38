// Version strings Shale reports to clients and operators.
#pragma once

namespace shale {

// What SELECT VERSION() returns. Clients parse the leading "8.0.x" to pick
// protocol features, so it names the MySQL version whose dialect we speak.
inline constexpr const char* kServerVersion = "8.0.35-shale-0.1.0";
inline constexpr const char* kVersionComment = "Shale distributed SQL database";

}  // namespace shale
