# frozen_string_literal: true

require "llm_failover/llm_failover" # the compiled extension: Scrubber::Prescan
require_relative "rule"
require_relative "checks"

module LlmFailover
  class Scrubber
    # The built-in rules. Their patterns are binary (/n) and run on the bytes of the
    # text, never over the whole of it: a 1 MB prompt is too long for a regexp pass
    # per rule (bench/scrubber.rb). The default ones name a kind of the C pre-scan
    # (ext/llm_failover/core/lf_scrub.c), which finds in one pass every place where
    # their matches may start; the others name literals every match starts with. The
    # pattern is tried, anchored, only there. A pattern and its kind's test in
    # lf_scrub.c change together (spec/llm_failover/scrubber/scrubber_reference_spec.rb compares them
    # with a pass of every pattern over generated texts).
    module Rules
      KEY_CHARS = "[A-Za-z0-9_-]"
      private_constant :KEY_CHARS

      # The default key shapes: OpenAI sk-, sk-proj-; Anthropic sk-ant-api03-; Groq
      # gsk_; AWS AKIA/ASIA; GitHub ghp_; Slack xoxb-, xoxp-, ...; Bearer tokens.
      API_KEY = [
        Rule.new("api_key", /sk-#{KEY_CHARS}{20,}/n, prescan: Prescan::SK),
        Rule.new("api_key", /gsk_[A-Za-z0-9]{20,}/n, prescan: Prescan::GSK),
        Rule.new("aws_key", /(?:AKIA|ASIA)[A-Z0-9]{16}(?![A-Z0-9])/n, prescan: Prescan::AWS),
        Rule.new("github_token", /ghp_[A-Za-z0-9]{36,}/n, prescan: Prescan::GHP),
        Rule.new("slack_token", /xox[abposr]-[A-Za-z0-9-]{10,}/n, prescan: Prescan::XOX),
        Rule.new("token", /[Bb]earer[ \t]+(?<value>[A-Za-z0-9._~+\/-]{16,}=*)/n, prescan: Prescan::BEARER)
      ].freeze

      # More shapes, each another literal search:
      # Scrubber.default(rules: Scrubber::Rules::MORE_KEYS). Google AIza; Hugging Face
      # hf_; Stripe sk_live_, sk_test_; GitHub gho_, ghs_, github_pat_; JWTs; PEM
      # private keys.
      MORE_KEYS = [
        Rule.new("api_key", /AIza[0-9A-Za-z_-]{35}/n, starts: ["AIza"]),
        Rule.new("api_key", /hf_[A-Za-z0-9]{30,}/n, starts: ["hf_"]),
        Rule.new("api_key", /sk_(?:live|test)_[A-Za-z0-9]{16,}/n, starts: ["sk_"]),
        Rule.new("github_token", /gh[os]_[A-Za-z0-9]{36,}/n, starts: %w[gho_ ghs_]),
        Rule.new("github_token", /github_pat_[A-Za-z0-9_]{22,}/n, starts: ["github_pat_"]),
        Rule.new("token", /eyJ#{KEY_CHARS}{8,}\.eyJ#{KEY_CHARS}{8,}\.#{KEY_CHARS}{8,}/n, starts: ["eyJ"]),
        Rule.new("private_key", /-----BEGIN [A-Z ]*PRIVATE KEY-----.*?-----END [A-Z ]*PRIVATE KEY-----/mn,
                 starts: ["-----BEGIN "])
      ].freeze

      # 123-45-6789 (dashes only), never issued numbers left alone.
      SSN = Rule.new("ssn", /[0-9](?<![0-9A-Za-z-][0-9])[0-9]{2}-[0-9]{2}-[0-9]{4}(?![0-9A-Za-z-])/n,
                     check: Checks.method(:ssn?), prescan: Prescan::SSN)

      # 13 to 19 digits starting 2-6 (Mastercard, Amex, Visa, Discover...) either in
      # one run or grouped 4-4-4-4(-n) or 4-6-5/4-6-4 with one separator; Luhn-checked.
      CARD = Rule.new(
        "card",
        /[2-6][0-9]{3}(?<![0-9][2-6][0-9]{3}|[0-9][ -][2-6][0-9]{3})
         (?:[0-9]{9,15}(?![0-9])|([ -])(?:[0-9]{4}\1[0-9]{4}\1[0-9]{4}(?:\1[0-9]{1,3})?|[0-9]{6}\1[0-9]{4,5})(?![0-9]|[ -][0-9]))/nx,
        check: Checks.method(:luhn?), prescan: Prescan::CARD
      )

      # Country, check digits, then the BBAN in one run or groups of four; mod-97 checked.
      IBAN = Rule.new(
        "iban",
        /[A-Z](?<![A-Za-z0-9][A-Z])[A-Z][0-9]{2}([ ]?)[A-Z0-9]{4}(?:\1[A-Z0-9]{4}){1,6}(?:\1[A-Z0-9]{1,3})?(?![A-Za-z0-9])/n,
        check: Checks.method(:iban?), prescan: Prescan::IBAN
      )

      # Opt-in: an optional +country, an area code (in parentheses or not), then two
      # groups; 10 to 15 digits in all.
      PHONE = Rule.new(
        "phone",
        /(?:(?<![0-9A-Za-z])(?=[+(])|(?<![0-9A-Za-z+]|[0-9][ .-]))
         (?:\+[0-9]{1,3}[ .-]?)?(?:\([0-9]{2,4}\)[ .-]?|[0-9]{2,4}[ .-])[0-9]{3,4}[ .-]?[0-9]{3,4}(?![0-9]|[ .-][0-9])/nx,
        check: Checks.method(:phone?), prescan: Prescan::PHONE
      )

      # Opt-in (a local part is at most 64 bytes, an address 254).
      EMAIL = Rule.new("email", /[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}/n,
                       prescan: Prescan::EMAIL)

      DEFAULT = (API_KEY + [SSN, CARD, IBAN]).freeze
    end
  end
end
