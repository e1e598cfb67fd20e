// The status page served at `/`: one self-contained HTML document (inline
// CSS and JavaScript, no external resource, so it works air-gapped) that
// polls /status.json every second and draws the last minutes as charts.
// The source is status_page.html; CMake embeds it as this constant.
#ifndef OUTBOX_HTTP_STATUS_PAGE_H_
#define OUTBOX_HTTP_STATUS_PAGE_H_

namespace outbox {

extern const char kStatusPageHtml[];

}  // namespace outbox

#endif  // OUTBOX_HTTP_STATUS_PAGE_H_
