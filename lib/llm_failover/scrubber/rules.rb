# frozen_string_literal: true

module LlmFailover
  class Scrubber
    # The built-in rules. Their patterns are binary (/n) and matched on the bytes of
    # the text; each names the literal strings one of which every match holds near its
    # start (or :digits, or "@"), so a prompt is searched for literals, not run through
    # every pattern (bench/scrubber.rb: a regexp pass over 1 MB costs about as much as
    # encoding it as JSON, a literal search a tenth of that). The others name a
    # Regexp that finds a tell-tale part of every value (eight digits in a row for a
    # card), cheap to search for, and run only on windows around its hits.
    # Lookbehinds come after a pattern's first character: first, they stop Onigmo
    # from skipping ahead to the bytes a match can start with (3x slower).
    #
    # Key shapes: OpenAI sk-, sk-proj-; Anthropic sk-ant-api03-; Groq gsk_; Google AIza;
    # Hugging Face hf_; Stripe sk_live_, sk_test_; AWS AKIA/ASIA; GitHub ghp_, gho_,
    # ghs_, github_pat_; Slack xoxb-, xoxp-, ...; JWTs; PEM private keys.
    # A trigger's first byte should not be common with a class after it: Onigmo
    # searches for the most selective-looking part of a pattern, and a pattern whose
    # part is [- ] ends up searching for every space (the SSN trigger was 6x slower).
    module Rules
      KEY_CHARS = "[A-Za-z0-9_-]"
      private_constant :KEY_CHARS

      API_KEY = [
        Rule.new("api_key", /sk-#{KEY_CHARS}{20,}/n, triggers: ["sk-"]),
        Rule.new("api_key", /gsk_[A-Za-z0-9]{20,}/n, triggers: ["sk_"]),
        Rule.new("api_key", /AIza[0-9A-Za-z_-]{35}/n, triggers: ["AIza"]),
        Rule.new("api_key", /hf_[A-Za-z0-9]{30,}/n, triggers: ["hf_"]),
        Rule.new("api_key", /sk_(?:live|test)_[A-Za-z0-9]{16,}/n, triggers: ["sk_"]),
        Rule.new("aws_key", /(?:AKIA|ASIA)[A-Z0-9]{16}(?![A-Z0-9])/n, triggers: %w[AKIA ASIA]),
        Rule.new("github_token", /gh[pos]_[A-Za-z0-9]{36,}/n, triggers: %w[ghp_ gho_ ghs_]),
        Rule.new("github_token", /github_pat_[A-Za-z0-9_]{22,}/n, triggers: ["github_pat_"]),
        Rule.new("slack_token", /xox[abposr]-[A-Za-z0-9-]{10,}/n, triggers: ["xox"]),
        Rule.new("token", /[Bb]earer[ \t]+(?<value>[A-Za-z0-9._~+\/-]{16,}=*)/n, triggers: ["earer"]),
        Rule.new("token", /eyJ#{KEY_CHARS}{8,}\.eyJ#{KEY_CHARS}{8,}\.#{KEY_CHARS}{8,}/n, triggers: ["eyJ"]),
        Rule.new("private_key", /-----BEGIN [A-Z ]*PRIVATE KEY-----.*?-----END [A-Z ]*PRIVATE KEY-----/mn,
                 triggers: ["PRIVATE KEY-----"])
      ].freeze

      EIGHT_DIGITS = /[0-9]{4}[ -]?[0-9]{4}/n # in every card number and IBAN
      private_constant :EIGHT_DIGITS

      # 3-2-4 with one separator, never issued numbers left alone.
      SSN = Rule.new("ssn", /[0-9](?<![0-9A-Za-z-][0-9])[0-9]{2}([- ])[0-9]{2}\1[0-9]{4}(?![0-9A-Za-z-])/n,
                     check: Checks.method(:ssn?), triggers: /[0-9]{2}[- ]?[0-9]{4}/n)

      # 13 to 19 digits starting 2-6 (Mastercard, Amex, Visa, Discover...) either in
      # one run or grouped 4-4-4-4(-n) or 4-6-5/4-6-4 with one separator; Luhn-checked.
      CARD = Rule.new(
        "card",
        /[2-6][0-9]{3}(?<![0-9][2-6][0-9]{3}|[0-9][ -][2-6][0-9]{3})
         (?:[0-9]{9,15}(?![0-9])|([ -])(?:[0-9]{4}\1[0-9]{4}\1[0-9]{4}(?:\1[0-9]{1,3})?|[0-9]{6}\1[0-9]{4,5})(?![0-9]|[ -][0-9]))/nx,
        check: Checks.method(:luhn?), triggers: EIGHT_DIGITS
      )

      # Country, check digits, then the BBAN in one run or groups of four; mod-97 checked.
      IBAN = Rule.new(
        "iban",
        /[A-Z](?<![A-Za-z0-9][A-Z])[A-Z][0-9]{2}([ ]?)[A-Z0-9]{4}(?:\1[A-Z0-9]{4}){1,6}(?:\1[A-Z0-9]{1,3})?(?![A-Za-z0-9])/n,
        check: Checks.method(:iban?), triggers: EIGHT_DIGITS
      )

      # Opt-in: an optional +country, an area code (in parentheses or not), then two
      # groups; 10 to 15 digits in all.
      PHONE = Rule.new(
        "phone",
        /(?:(?<![0-9A-Za-z])(?=[+(])|(?<![0-9A-Za-z+]|[0-9][ .-]))
         (?:\+[0-9]{1,3}[ .-]?)?(?:\([0-9]{2,4}\)[ .-]?|[0-9]{2,4}[ .-])[0-9]{3,4}[ .-]?[0-9]{3,4}(?![0-9]|[ .-][0-9])/nx,
        check: Checks.method(:phone?), triggers: /[0-9]{3}[ .-]?[0-9]{4}/n
      )

      # Opt-in.
      EMAIL = Rule.new("email", /[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}/n, triggers: ["@"])

      DEFAULT = (API_KEY + [SSN, CARD, IBAN]).freeze
    end
  end
end
