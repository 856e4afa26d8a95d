// RFC 4180 CSV fields, the one writer's rules for every CSV the project
// writes from C++ (sweep results, patch tables, statistics): text quoted
// when it holds a comma, a quote, CR or LF (quotes doubled), numbers with
// enough digits to read back the same double.
#ifndef BERTOLOGY_COMMON_CSV_H_
#define BERTOLOGY_COMMON_CSV_H_

#include <string>

namespace bertology {

// `s` as one field: unchanged, or in double quotes with each quote doubled
// when it contains ',', '"', '\r' or '\n'.
std::string CsvField(const std::string& s);

// `v` with 17 significant digits (round-trips through strtod); NaN, "no
// value" (e.g. a relative change at a zero baseline), is the empty field,
// which spreadsheets and pandas read as missing; infinities are "inf" and
// "-inf".
std::string CsvNumber(double v);

}  // namespace bertology

#endif  // BERTOLOGY_COMMON_CSV_H_
