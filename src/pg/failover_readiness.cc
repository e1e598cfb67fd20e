#include "pg/failover_readiness.h"

#include <algorithm>
#include <cstdlib>
#include <memory>
#include <set>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "outbox/status_macros.h"
#include "pg/pg_connection.h"

namespace outbox {
namespace {

// Keywords a per-host conninfo leaves out: the host lists it replaces, and
// the ones that would refuse a standby or pick another host.
bool PerHostDropped(absl::string_view key) {
  return key == "host" || key == "hostaddr" || key == "port" ||
         key == "target_session_attrs" || key == "load_balance_hosts";
}

// key='value' with the conninfo quoting (backslash and quote escaped).
std::string Pair(absl::string_view key, absl::string_view value) {
  std::string out = absl::StrCat(key, "='");
  for (char c : value) {
    if (c == '\\' || c == '\'') out.push_back('\\');
    out.push_back(c);
  }
  out.push_back('\'');
  return out;
}

std::vector<std::string> List(absl::string_view value) {
  if (value.empty()) return {};
  return absl::StrSplit(value, ',');
}

// synchronized_standby_slots as slot names (trimmed, quotes removed).
std::vector<std::string> SlotNames(absl::string_view setting) {
  std::vector<std::string> names;
  for (absl::string_view part : absl::StrSplit(setting, ',')) {
    part = absl::StripAsciiWhitespace(part);
    if (part.size() >= 2 && part.front() == '"' && part.back() == '"') {
      part = part.substr(1, part.size() - 2);
    }
    if (!part.empty()) names.emplace_back(part);
  }
  return names;
}

std::string Reload(absl::string_view setting, absl::string_view value) {
  return absl::StrCat("ALTER SYSTEM SET ", setting, " = ", value,
                      "; SELECT pg_reload_conf();");
}

void StandbyProblems(const std::string& slot, const PrimaryFacts& primary,
                     const std::vector<std::string>& synchronized,
                     const StandbyFacts& s, std::vector<std::string>* out) {
  const std::string on = absl::StrCat(" on standby ", s.node);
  if (!s.error.empty()) {
    out->push_back(absl::StrCat("standby ", s.node,
                                " not checked (its failover readiness is "
                                "unknown): ",
                                s.error));
    return;
  }
  if (!s.in_recovery) {
    out->push_back(absl::StrCat(
        s.node,
        " is not a standby (pg_is_in_recovery() is false), so it cannot take "
        "over the slot: list only standbys besides the primary"));
    return;
  }
  if (!s.sync_replication_slots) {
    out->push_back(absl::StrCat(
        "sync_replication_slots does not exist", on,
        " (PostgreSQL 16 or older): it cannot keep a copy of the slot; "
        "upgrade it to 17+"));
    return;
  }
  if (*s.sync_replication_slots != "on") {
    out->push_back(
        absl::StrCat("sync_replication_slots is ", *s.sync_replication_slots,
                     on, ": the slot is not copied there; run ",
                     Reload("sync_replication_slots", "on"), " on ", s.node));
  }
  if (s.hot_standby_feedback.value_or("") != "on") {
    out->push_back(absl::StrCat(
        "hot_standby_feedback is ", s.hot_standby_feedback.value_or("unset"),
        on, ": slot sync needs it; run ", Reload("hot_standby_feedback", "on"),
        " on ", s.node));
  }
  const std::string name = s.primary_slot_name.value_or("");
  if (name.empty()) {
    out->push_back(absl::StrCat(
        "primary_slot_name is not set", on,
        ": slot sync needs a physical slot; run SELECT "
        "pg_create_physical_replication_slot('<name>') on the primary ",
        primary.node, ", ", Reload("primary_slot_name", "'<name>'"), " on ",
        s.node,
        ", and add <name> to the primary's synchronized_standby_slots"));
  } else if (std::find(synchronized.begin(), synchronized.end(), name) ==
             synchronized.end()) {
    std::vector<std::string> want = synchronized;
    want.push_back(name);
    out->push_back(absl::StrCat(
        "synchronized_standby_slots on primary ", primary.node,
        " does not name \"", name, "\", the primary_slot_name of standby ",
        s.node,
        ": the relay's slot can get ahead of that standby, which then "
        "cannot take it over; run ",
        Reload("synchronized_standby_slots",
               absl::StrCat("'", absl::StrJoin(want, ","), "'")),
        " on ", primary.node));
  }
  if (!s.primary_conninfo_has_dbname) {
    out->push_back(absl::StrCat(
        "primary_conninfo", on,
        " cannot be read (grant pg_read_all_settings to the relay's role): "
        "whether it names a dbname, which slot sync needs, is unknown"));
  } else if (!*s.primary_conninfo_has_dbname) {
    out->push_back(absl::StrCat(
        "primary_conninfo", on,
        " has no dbname: slot sync needs one; add dbname=<database> to it (",
        Reload("primary_conninfo", "'... dbname=<database>'"), ")"));
  }
  if (!s.slot_exists) {
    out->push_back(absl::StrCat(
        "replication slot \"", slot, "\" is not", on,
        " (not synchronized yet, or slot sync is off): after a failover to ",
        s.node, " the slot would be gone"));
  } else if (!s.slot_synced || !s.slot_failover) {
    out->push_back(
        absl::StrCat("replication slot \"", slot, "\"", on,
                     " has synced=", s.slot_synced ? "true" : "false",
                     " failover=", s.slot_failover ? "true" : "false",
                     ": it is not the primary's synchronized copy; drop it on ",
                     s.node, " (SELECT pg_drop_replication_slot('", slot,
                     "')) so slot sync can create it"));
  }
}

}  // namespace

absl::StatusOr<std::vector<HostConninfo>> SplitHosts(
    const std::string& conninfo, absl::string_view what) {
  ASSIGN_OR_RETURN(auto pairs, PgConnection::ParseConninfo(conninfo, what));
  std::vector<std::string> hosts, addrs, ports;
  std::vector<std::string> rest;
  for (const auto& [key, value] : pairs) {
    if (key == "host") hosts = List(value);
    if (key == "hostaddr") addrs = List(value);
    if (key == "port") ports = List(value);
    if (!PerHostDropped(key)) rest.push_back(Pair(key, value));
  }
  const size_t n = std::max(hosts.size(), addrs.size());
  if (!hosts.empty() && !addrs.empty() && hosts.size() != addrs.size()) {
    return absl::InvalidArgumentError(
        "conninfo: host and hostaddr list different numbers of hosts");
  }
  if (ports.size() > 1 && ports.size() != n) {
    return absl::InvalidArgumentError(
        absl::StrCat("conninfo: ", n, " hosts but ", ports.size(), " ports"));
  }
  std::vector<HostConninfo> out;
  if (n == 0) {
    out.push_back({"", conninfo});
    return out;
  }
  for (size_t i = 0; i < n; ++i) {
    std::vector<std::string> parts = rest;
    std::string name = !hosts.empty() ? hosts[i] : addrs[i];
    if (!hosts.empty()) parts.push_back(Pair("host", hosts[i]));
    if (!addrs.empty()) parts.push_back(Pair("hostaddr", addrs[i]));
    std::string port = ports.empty() ? "" : ports[ports.size() == 1 ? 0 : i];
    if (!port.empty()) parts.push_back(Pair("port", port));
    out.push_back({absl::StrCat(name, ":", port.empty() ? "5432" : port),
                   absl::StrJoin(parts, " ")});
  }
  return out;
}

bool ConninfoHasDbname(const std::string& conninfo) {
  auto pairs = PgConnection::ParseConninfo(conninfo, "primary_conninfo");
  if (!pairs.ok()) return false;
  for (const auto& [key, value] : *pairs) {
    if (key == "dbname" && !value.empty()) return true;
  }
  return false;
}

std::vector<std::string> FailoverProblems(
    const std::string& slot, const PrimaryFacts& primary,
    const std::vector<StandbyFacts>& standbys) {
  std::vector<std::string> out;
  if (primary.in_recovery) {
    out.push_back(
        absl::StrCat("postgres.conninfo reaches ", primary.node,
                     ", a standby: failover slots live on the primary; point "
                     "postgres.conninfo at it (target_session_attrs=primary)"));
    return out;
  }
  if (!primary.slot_failover) {
    out.push_back(absl::StrCat("replication slot \"", slot,
                               "\" does not exist on primary ", primary.node,
                               " yet: failover readiness is unknown"));
  } else if (!*primary.slot_failover) {
    out.push_back(absl::StrCat(
        "replication slot \"", slot, "\" on primary ", primary.node,
        " has failover=false, so no standby keeps a copy: set "
        "postgres.failover_slot: true (the relay then enables it)"));
  }
  const std::vector<std::string> synchronized =
      SlotNames(primary.synchronized_standby_slots);
  if (synchronized.empty()) {
    std::vector<std::string> names;
    for (const StandbyFacts& s : standbys) {
      if (s.primary_slot_name && !s.primary_slot_name->empty()) {
        names.push_back(*s.primary_slot_name);
      }
    }
    out.push_back(absl::StrCat(
        "synchronized_standby_slots is empty on primary ", primary.node,
        ": the relay's slot can get ahead of the standbys, which then cannot "
        "take it over; run ",
        Reload("synchronized_standby_slots",
               absl::StrCat("'",
                            names.empty() ? "<standby's primary_slot_name>"
                                          : absl::StrJoin(names, ","),
                            "'")),
        " on ", primary.node));
  }
  for (const std::string& name : synchronized) {
    auto it = primary.physical_slots.find(name);
    if (it == primary.physical_slots.end()) {
      out.push_back(absl::StrCat(
          "synchronized_standby_slots on primary ", primary.node, " names \"",
          name,
          "\", which is no physical slot there: the relay's slot waits for "
          "it; create it (SELECT pg_create_physical_replication_slot('",
          name, "')) for the standby's primary_slot_name, or fix the setting"));
    } else if (!it->second) {
      out.push_back(absl::StrCat(
          "physical slot \"", name,
          "\" in synchronized_standby_slots on primary ", primary.node,
          " is not active: its standby is not streaming, and the relay "
          "receives nothing until it is back (or the setting drops it)"));
    }
  }
  for (const StandbyFacts& s : standbys) {
    StandbyProblems(slot, primary, synchronized, s, &out);
  }
  if (standbys.empty()) {
    out.push_back(
        "no standby checked: postgres.conninfo names one host and "
        "postgres.standby_conninfo is empty, so whether a standby keeps the "
        "slot is unknown (list the standbys in postgres.standby_conninfo or "
        "as more hosts of postgres.conninfo)");
  }
  return out;
}

namespace {

constexpr char kPrimaryQuery[] =
    "SELECT current_setting('server_version_num')::int, pg_is_in_recovery(), "
    "coalesce(current_setting('synchronized_standby_slots', true), ''), "
    "(SELECT to_jsonb(s) ->> 'failover' FROM pg_replication_slots s "
    "WHERE slot_name = $1)";
constexpr char kPhysicalSlotsQuery[] =
    "SELECT slot_name, active FROM pg_replication_slots "
    "WHERE slot_type = 'physical'";
// NULL for a setting that does not exist; pg_settings leaves out the ones
// the role may not read (primary_conninfo needs pg_read_all_settings).
constexpr char kStandbyQuery[] =
    "SELECT pg_is_in_recovery(), "
    "current_setting('sync_replication_slots', true), "
    "current_setting('hot_standby_feedback', true), "
    "current_setting('primary_slot_name', true), "
    "(SELECT setting FROM pg_settings WHERE name = 'primary_conninfo'), "
    "s.slot_name IS NOT NULL, to_jsonb(s) ->> 'failover', to_jsonb(s) ->> "
    "'synced' "
    "FROM (SELECT 1) one LEFT JOIN pg_replication_slots s "
    "ON s.slot_name = $1";

std::optional<std::string> Optional(const PgResult& res, int col) {
  if (PgConnection::IsNull(res, 0, col)) return std::nullopt;
  return PgConnection::Value(res, 0, col);
}

// A short-lived connection of the readiness check to one node.
absl::StatusOr<std::unique_ptr<PgConnection>> ConnectForCheck(
    const std::string& conninfo, const FailoverCheckOptions& options) {
  PgConnectOptions connect;
  connect.conninfo = conninfo;
  connect.application_name = "outbox-relay-failover-check";
  connect.connect_timeout_s = options.connect_timeout_s;
  return PgConnection::Connect(connect);
}

StandbyFacts ReadStandby(const HostConninfo& host,
                         const FailoverCheckOptions& options) {
  StandbyFacts s;
  s.node = host.node;
  absl::StatusOr<std::unique_ptr<PgConnection>> conn =
      ConnectForCheck(host.conninfo, options);
  if (!conn.ok()) {
    s.error = std::string(conn.status().message());
    return s;
  }
  absl::StatusOr<PgResult> res =
      (*conn)->QueryParams(kStandbyQuery, {options.slot});
  if (!res.ok()) {
    s.error = std::string(res.status().message());
    return s;
  }
  s.in_recovery = PgConnection::Value(*res, 0, 0) == "t";
  s.sync_replication_slots = Optional(*res, 1);
  s.hot_standby_feedback = Optional(*res, 2);
  s.primary_slot_name = Optional(*res, 3);
  if (std::optional<std::string> pc = Optional(*res, 4)) {
    s.primary_conninfo_has_dbname = ConninfoHasDbname(*pc);
  }
  s.slot_exists = PgConnection::Value(*res, 0, 5) == "t";
  s.slot_failover = PgConnection::Value(*res, 0, 6) == "true";
  s.slot_synced = PgConnection::Value(*res, 0, 7) == "true";
  return s;
}

}  // namespace

absl::StatusOr<FailoverReport> CheckFailoverReadiness(
    const FailoverCheckOptions& options) {
  absl::StatusOr<std::unique_ptr<PgConnection>> conn =
      ConnectForCheck(options.conninfo, options);
  if (!conn.ok()) return absl::UnavailableError(conn.status().message());
  PgConnection& db = **conn;
  FailoverReport report;
  report.primary.node = db.Node();
  {
    ASSIGN_OR_RETURN(PgResult res,
                     db.QueryParams(kPrimaryQuery, {options.slot}));
    report.version_num = atoi(PgConnection::Value(res, 0, 0).c_str());
    report.supported = report.version_num >= 170000;
    if (!report.supported) return report;
    report.primary.in_recovery = PgConnection::Value(res, 0, 1) == "t";
    report.primary.synchronized_standby_slots = PgConnection::Value(res, 0, 2);
    if (!PgConnection::IsNull(res, 0, 3)) {
      report.primary.slot_failover = PgConnection::Value(res, 0, 3) == "true";
    }
  }
  {
    ASSIGN_OR_RETURN(PgResult res, db.Query(kPhysicalSlotsQuery));
    for (int i = 0; i < PgConnection::Rows(res); ++i) {
      report.primary.physical_slots[PgConnection::Value(res, i, 0)] =
          PgConnection::Value(res, i, 1) == "t";
    }
  }
  std::vector<HostConninfo> standbys;
  for (const std::string* c : {&options.conninfo, &options.standby_conninfo}) {
    if (c->empty() && c == &options.standby_conninfo) continue;
    ASSIGN_OR_RETURN(
        std::vector<HostConninfo> hosts,
        SplitHosts(*c, c == &options.conninfo ? "postgres.conninfo"
                                              : "postgres.standby_conninfo"));
    // One host in postgres.conninfo is the primary itself.
    if (c == &options.conninfo && hosts.size() < 2) continue;
    standbys.insert(standbys.end(), hosts.begin(), hosts.end());
  }
  std::set<std::string> seen = {report.primary.node};
  for (const HostConninfo& host : standbys) {
    if (!seen.insert(host.node).second) continue;
    report.standbys.push_back(ReadStandby(host, options));
  }
  report.problems =
      FailoverProblems(options.slot, report.primary, report.standbys);
  return report;
}

}  // namespace outbox
