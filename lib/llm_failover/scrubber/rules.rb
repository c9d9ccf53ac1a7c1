# frozen_string_literal: true

module LlmFailover
  class Scrubber
    # The built-in rules. Their patterns are binary (/n) and run on the bytes of the
    # text. Each names either literals one of which every match holds near its start
    # (the text is searched for the literal, and the pattern runs only when one is
    # there), or a Regexp that finds a tell-tale part of every value (eight digits in
    # a row for a card) and the pattern runs on windows around its hits. A 1 MB prompt
    # is too long for a pass of every pattern (bench/scrubber.rb: ~1.5 ms each, and a
    # literal search 0.2 ms).
    #
    # Onigmo searches for the part of a pattern that looks most selective: a
    # lookbehind comes after a pattern's first character, and no pattern has a part
    # like [- ] at a fixed place (it searched for every space: SSNs 6x slower).
    module Rules
      KEY_CHARS = "[A-Za-z0-9_-]"
      private_constant :KEY_CHARS

      # The default key shapes: OpenAI sk-, sk-proj-; Anthropic sk-ant-api03-; Groq
      # gsk_; AWS AKIA/ASIA; GitHub ghp_; Slack xoxb-, xoxp-, ...; Bearer tokens.
      API_KEY = [
        Rule.new("api_key", /sk-#{KEY_CHARS}{20,}/n, triggers: ["sk-"]),
        Rule.new("api_key", /gsk_[A-Za-z0-9]{20,}/n, triggers: ["gsk_"]),
        Rule.new("aws_key", /(?:AKIA|ASIA)[A-Z0-9]{16}(?![A-Z0-9])/n, triggers: %w[AKIA ASIA]),
        Rule.new("github_token", /ghp_[A-Za-z0-9]{36,}/n, triggers: ["ghp_"]),
        Rule.new("slack_token", /xox[abposr]-[A-Za-z0-9-]{10,}/n, triggers: ["xox"]),
        Rule.new("token", /[Bb]earer[ \t]+(?<value>[A-Za-z0-9._~+\/-]{16,}=*)/n, triggers: ["earer"])
      ].freeze

      # More shapes, each another literal search (~0.2 ms per MB):
      # Scrubber.default(rules: Scrubber::Rules::MORE_KEYS). Google AIza; Hugging Face
      # hf_; Stripe sk_live_, sk_test_; GitHub gho_, ghs_, github_pat_; JWTs; PEM
      # private keys.
      MORE_KEYS = [
        Rule.new("api_key", /AIza[0-9A-Za-z_-]{35}/n, triggers: ["AIza"]),
        Rule.new("api_key", /hf_[A-Za-z0-9]{30,}/n, triggers: ["hf_"]),
        Rule.new("api_key", /sk_(?:live|test)_[A-Za-z0-9]{16,}/n, triggers: ["sk_"]),
        Rule.new("github_token", /gh[os]_[A-Za-z0-9]{36,}/n, triggers: %w[gho_ ghs_]),
        Rule.new("github_token", /github_pat_[A-Za-z0-9_]{22,}/n, triggers: ["github_pat_"]),
        Rule.new("token", /eyJ#{KEY_CHARS}{8,}\.eyJ#{KEY_CHARS}{8,}\.#{KEY_CHARS}{8,}/n, triggers: ["eyJ"]),
        Rule.new("private_key", /-----BEGIN [A-Z ]*PRIVATE KEY-----.*?-----END [A-Z ]*PRIVATE KEY-----/mn,
                 triggers: ["PRIVATE KEY-----"])
      ].freeze

      # In every card number and IBAN: "1111 1111", "3704 0044", "12345698". A search
      # for it costs ~1.7 ms per MB of prose, ~18 ms per MB of a table of numbers.
      EIGHT_DIGITS = /[0-9]{4}[ -]?[0-9]{4}/n
      # An IBAN's country code is up to 14 bytes before its first six digits ("NL91
      # ABNA 0417"); the longest is 34 characters in groups of four (42), plus the byte
      # either side its pattern looks at.
      DIGIT_REACH = [40, 48].freeze
      private_constant :EIGHT_DIGITS, :DIGIT_REACH

      # 123-45-6789, never issued numbers left alone. Dashes only: with a space
      # allowed, Onigmo searches for every space (3x slower on prose).
      SSN = Rule.new("ssn", /[0-9](?<![0-9A-Za-z-][0-9])[0-9]{2}-[0-9]{2}-[0-9]{4}(?![0-9A-Za-z-])/n,
                     check: Checks.method(:ssn?), triggers: /[0-9]{3}-[0-9]{2}-[0-9]{4}/n, reach: [2, 16])

      # 13 to 19 digits starting 2-6 (Mastercard, Amex, Visa, Discover...) either in
      # one run or grouped 4-4-4-4(-n) or 4-6-5/4-6-4 with one separator; Luhn-checked.
      CARD = Rule.new(
        "card",
        /[2-6][0-9]{3}(?<![0-9][2-6][0-9]{3}|[0-9][ -][2-6][0-9]{3})
         (?:[0-9]{9,15}(?![0-9])|([ -])(?:[0-9]{4}\1[0-9]{4}\1[0-9]{4}(?:\1[0-9]{1,3})?|[0-9]{6}\1[0-9]{4,5})(?![0-9]|[ -][0-9]))/nx,
        check: Checks.method(:luhn?), triggers: EIGHT_DIGITS, reach: DIGIT_REACH
      )

      # Country, check digits, then the BBAN in one run or groups of four; mod-97 checked.
      IBAN = Rule.new(
        "iban",
        /[A-Z](?<![A-Za-z0-9][A-Z])[A-Z][0-9]{2}([ ]?)[A-Z0-9]{4}(?:\1[A-Z0-9]{4}){1,6}(?:\1[A-Z0-9]{1,3})?(?![A-Za-z0-9])/n,
        check: Checks.method(:iban?), triggers: EIGHT_DIGITS, reach: DIGIT_REACH
      )

      # Opt-in: an optional +country, an area code (in parentheses or not), then two
      # groups; 10 to 15 digits in all.
      PHONE = Rule.new(
        "phone",
        /(?:(?<![0-9A-Za-z])(?=[+(])|(?<![0-9A-Za-z+]|[0-9][ .-]))
         (?:\+[0-9]{1,3}[ .-]?)?(?:\([0-9]{2,4}\)[ .-]?|[0-9]{2,4}[ .-])[0-9]{3,4}[ .-]?[0-9]{3,4}(?![0-9]|[ .-][0-9])/nx,
        check: Checks.method(:phone?), triggers: /[0-9]{3}[ .-]?[0-9]{4}/n, reach: DIGIT_REACH
      )

      # Opt-in (a local part is at most 64 bytes, an address 254).
      EMAIL = Rule.new("email", /[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}/n,
                       triggers: /@/n, reach: [64, 256])

      DEFAULT = (API_KEY + [SSN, CARD, IBAN]).freeze
    end
  end
end
