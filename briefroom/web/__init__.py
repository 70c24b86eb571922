"""Web research behind the tool contract: `web_search` (a search provider: SearXNG or
Brave) and `fetch_url` (robots.txt, per-domain rate limit, timeouts, size cap, bounded
redirects, only globally reachable addresses), a cache in the data directory, and
fetched pages indexed like documents so their passages are retrieved and cited by URL.

Modules: `special_ranges` (the IANA special-purpose address registries, as data),
`addresses` (an address judged by them), `net` (the address policy and the guarded
HTTP client), `extract` (content types to text), `cache`, `index` (the run's index,
which also takes pages), `search` (providers), `fetch` (one URL, start to finish:
robots.txt, rate limit, redirects), `tools` (the two Tools and what the Searcher and
the run directory need of them).
"""
