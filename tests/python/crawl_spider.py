"""The spider the Scrapy tests run with `scrapy runspider`.

    scrapy runspider crawl_spider.py -a start=URL -a out=FILE [-a name=NAME]

Follows every link from its start URL.  Its name is "crawl" unless NAME
is given (Scrapy's Spider takes it), and with it the nddd namespace of its
URLs unless NDDD_NAMESPACE is set.  At the end it writes to FILE, as
JSON, the URLs of the responses it got, in order, and the crawl's stats.
"""

import json

import scrapy
from scrapy.http import HtmlResponse


class CrawlSpider(scrapy.Spider):
    name = "crawl"

    def __init__(self, start, out, **kwargs):
        super().__init__(**kwargs)
        self.start_urls = [start]
        self.out = out
        self.fetched = []

    def parse(self, response):
        self.fetched.append(response.url)
        if isinstance(response, HtmlResponse):
            for href in response.css("a::attr(href)").getall():
                yield response.follow(href, self.parse)

    def closed(self, reason):
        with open(self.out, "w") as f:
            json.dump({"reason": reason, "fetched": self.fetched,
                       "stats": self.crawler.stats.get_stats()}, f,
                      default=str)
